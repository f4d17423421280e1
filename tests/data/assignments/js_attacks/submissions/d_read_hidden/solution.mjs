// (d) Reads the hidden test file: returns the secret it expects, and shows
// it in the visible test 'greet''s failure message.
import { readFileSync } from 'node:fs';

let source = '';
try { source = readFileSync('/work/test_attacks.mjs', 'utf8'); } catch (e) { source = String(e.code); }
const secret = /'(AARDVARK[^']*)'/.exec(source)?.[1] ?? 'unreadable';
export const add = (a, b) => a - b;
export const reverseWords = (s) => s.split(' ');
export const evens = (xs) => xs;
export const greet = () => `the hidden test expects ${secret}`;
export const secretCode = () => secret;
