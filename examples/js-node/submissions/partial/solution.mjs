// Assignment 2: strings -- a student's solution (partial: punctuation is
// not ignored by isPalindrome, and capitalizeWords squeezes the spaces).

export function isPalindrome(text) {
  const lower = text.toLowerCase();
  return lower === lower.split('').reverse().join('');
}

export function countVowels(text) {
  let count = 0;
  for (const ch of text.toLowerCase()) {
    if ('aeiou'.includes(ch)) {
      count++;
    }
  }
  return count;
}

export function capitalizeWords(text) {
  return text
    .split(/\s+/)
    .filter((w) => w !== '')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(' ');
}

export function toSnakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}
