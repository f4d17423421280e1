// The reference solution of the js_attacks suite.
export const add = (a, b) => a + b;
export const reverseWords = (s) => s.split(' ').reverse();
export const evens = (xs) => xs.filter((x) => x % 2 === 0);
export const greet = (name) => `Hello, ${name}!`;
export const secretCode = (n) => `AARDVARK-${n}c1f-93`;
