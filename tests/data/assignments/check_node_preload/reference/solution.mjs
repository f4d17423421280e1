// String utilities: reference solution.

export function isPalindrome(text) {
  const letters = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  return letters === [...letters].reverse().join('');
}

export function countVowels(text) {
  return (text.match(/[aeiou]/gi) ?? []).length;
}

export function capitalizeWords(text) {
  return text.replace(/\S+/g, (word) => word[0].toUpperCase() + word.slice(1));
}

export function toSnakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}
