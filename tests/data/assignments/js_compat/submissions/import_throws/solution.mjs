// The reference, whose module throws when it loads (a settings file it
// reads is not there): every test fails, the error is shown, the run is
// graded, not crashed, split as in one process.
import { readFileSync } from 'node:fs';

// Reference solution of the js_compat suite: every shape the tests use.
export class EmptyStackError extends Error {
  constructor(message) {
    super(message);
    this.name = 'EmptyStackError';
    this.code = 'E_EMPTY';
  }
}

export class Stack {
  static CAPACITY = 3;
  #items = [];
  push(x) {
    if (this.#items.length >= Stack.CAPACITY) throw new RangeError('stack full');
    this.#items.push(x);
    return this;
  }
  pop() {
    if (this.#items.length === 0) throw new EmptyStackError('pop from an empty stack');
    return this.#items.pop();
  }
  get size() { return this.#items.length; }
  peek() { return this.#items.at(-1); }
  *[Symbol.iterator]() { yield* [...this.#items].reverse(); }
  toString() { return `Stack(${this.#items.join(', ')})`; }
  static of(...xs) { const s = new Stack(); for (const x of xs) s.push(x); return s; }
}

export class Point {
  constructor(x, y) { this.x = x; this.y = y; }
  plus(other) { return new Point(this.x + other.x, this.y + other.y); }
}

export function parseInteger(text) {
  if (!/^-?\d+$/.test(text)) throw new TypeError(`not an integer: ${text}`);
  return Number(text);
}

export function countIf(items, predicate) {
  let n = 0;
  for (const x of items) if (predicate(x)) n++;
  return n;
}

const listeners = [];
export function subscribe(fn) { listeners.push(fn); return listeners.length; }
export function unsubscribe(fn) {
  const i = listeners.indexOf(fn);
  if (i >= 0) listeners.splice(i, 1);
  return i >= 0;
}
export function emit(value) { for (const fn of listeners) fn(value); return listeners.length; }

export function* fibonacci() {
  let [a, b] = [0, 1];
  for (;;) { yield a; [a, b] = [b, a + b]; }
}

export function take(iterable, n) {
  const out = [];
  if (n <= 0) return out;
  for (const x of iterable) { out.push(x); if (out.length >= n) break; }
  return out;
}

export async function delayedDouble(x) {
  await new Promise((r) => setTimeout(r, 5));
  return 2 * x;
}

export async function failLater() {
  await null;
  throw new EmptyStackError('nothing later');
}

export async function mapAsync(items, fn) {
  const out = [];
  for (const x of items) out.push(await fn(x));
  return out;
}

export async function* countdown(n) {
  for (let i = n; i > 0; i--) { await null; yield i; }
}

export function report(rows) {
  for (const [k, v] of rows) console.log(`${k}: ${v}`);
  console.error('done');
  return rows.length;
}

export function wordIndex(text) {
  const m = new Map();
  for (const w of text.split(/\s+/).filter(Boolean)) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

export function uniqueLetters(text) { return new Set(text.replace(/[^a-z]/g, '')); }

export function addDays(date, days) { return new Date(date.getTime() + days * 86400000); }

export function stats(xs) {
  const sum = xs.reduce((a, b) => a + b, 0);
  return { count: xs.length, mean: xs.length ? sum / xs.length : NaN, sum, empty: xs.length === 0 ? null : undefined };
}

export function special() { return [-0, NaN, Infinity, -Infinity, 0.1 + 0.2, 2 ** 60, 12345678901234567890n]; }

export function nested() { return { a: [1, { b: [2, 3] }], c: 'd', e: true, f: null }; }

export const VERSION = '1.2.0';

let calls = 0;
export function counter() { return ++calls; }

export default function greet(name = 'world') { return `Hello, ${name}!`; }

export const settings = JSON.parse(readFileSync('settings.json', 'utf8'));
