// (b) Objects that claim to equal whatever they are compared with: their
// valueOf/Symbol.toPrimitive return the expected value, read from the
// calling test's source line (found through the stack), and equals() says
// true; nothing is computed.
import { readFileSync } from 'node:fs';

function expected() {
  const m = /(file:\/\/\/[^\s)]+\.mjs):(\d+):\d+/.exec(new Error().stack.split('\n').filter((l) => l.includes('test_attacks'))[0] ?? '');
  if (!m) return undefined;
  const line = readFileSync(new URL(m[1]), 'utf8').split('\n')[Number(m[2]) - 1];
  const v = /, ('[^']*'|-?\d+)\);\s*$/.exec(line)?.[1];
  if (v === undefined) return undefined;
  if (/^-?\d+$/.test(v)) return Number(v);
  if (/^'.*'$/.test(v)) return v.slice(1, -1);
  return undefined;
}

class Anything {
  [Symbol.toPrimitive]() { return expected(); }
  valueOf() { return expected(); }
  toString() { return String(expected()); }
  equals() { return true; }
}

export const add = () => new Anything();
export const reverseWords = () => new Anything();
export const evens = () => new Anything();
export const greet = () => new Anything();
export const secretCode = () => new Anything();
