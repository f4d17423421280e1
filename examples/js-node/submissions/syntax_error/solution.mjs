// Assignment 2: strings -- a student's solution (does not load: a
// missing closing brace).

export function isPalindrome(text) {
  const lower = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  return lower === lower.split('').reverse().join('');
}

export function countVowels(text) {
  let count = 0;
  for (const ch of text.toLowerCase()) {
    if ('aeiou'.includes(ch)) {
      count++;
  }
  return count;
}

export function capitalizeWords(text) {
  return text.replace(/\S+/g, (w) => w[0].toUpperCase() + w.slice(1));
}

export function toSnakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}
