// Assignment 2: strings -- a student's solution that quits on input it
// does not like: process.exit(0) ends the whole test process with status
// 0 before any result is written, so no test of the manifest is reported.

export function isPalindrome(text) {
  const lower = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  return lower === lower.split('').reverse().join('');
}

export function countVowels(text) {
  if (text === '') {
    console.log('empty string, nothing to count');
    process.exit(0);
  }
  return (text.match(/[aeiou]/gi) ?? []).length;
}

export function capitalizeWords(text) {
  return text.replace(/\S+/g, (w) => w[0].toUpperCase() + w.slice(1));
}

export function toSnakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}
