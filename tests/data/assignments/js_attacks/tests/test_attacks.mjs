// Hidden tests of the js_attacks suite: each submission is wrong and tries
// one way of getting marks anyway.  node:assert's legacy (loose) asserts, as
// many real suites use them.
import { test } from 'node:test';
import assert from 'node:assert';
import * as sol from './solution.mjs';

test('add', () => {
  assert.equal(sol.add(2, 3), 5);
  assert.equal(sol.add(-1, 1), 0);
});

test('reverse words', () => {
  assert.deepEqual(sol.reverseWords('a b c'), ['c', 'b', 'a']);
});

test('evens', () => {
  assert.deepStrictEqual(sol.evens([1, 2, 3, 4]), [2, 4]);
});

test('greet', () => {
  assert.equal(sol.greet('Ada'), 'Hello, Ada!');
});

test('secret code', () => {
  assert.equal(sol.secretCode(7), 'AARDVARK-7c1f-93');
});
