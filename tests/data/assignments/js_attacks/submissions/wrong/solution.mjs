// No attack, wrong everywhere: the control.
export const add = (a, b) => a - b;
export const reverseWords = (s) => s.split(' ');
export const evens = (xs) => xs;
export const greet = (name) => `Hi ${name}`;
export const secretCode = () => 'no idea';
