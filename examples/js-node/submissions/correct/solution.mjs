// Assignment 2: strings -- a student's solution (correct).

export function isPalindrome(text) {
  let clean = '';
  for (const ch of text.toLowerCase()) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
      clean += ch;
    }
  }
  let reversed = '';
  for (let i = clean.length - 1; i >= 0; i--) {
    reversed += clean[i];
  }
  return clean === reversed;
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
  const words = text.split(' ');
  for (let i = 0; i < words.length; i++) {
    if (words[i].length > 0) {
      words[i] = words[i][0].toUpperCase() + words[i].slice(1);
    }
  }
  return words.join(' ');
}

export function toSnakeCase(name) {
  let result = '';
  for (const ch of name) {
    if (ch >= 'A' && ch <= 'Z') {
      result += '_' + ch.toLowerCase();
    } else {
      result += ch;
    }
  }
  return result;
}
