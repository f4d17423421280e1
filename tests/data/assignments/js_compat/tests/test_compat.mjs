// Compatibility suite of split node --test runs: shapes real suites have.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import greet, * as sol from './solution.mjs';
import { Stack, Point, EmptyStackError } from './solution.mjs';

describe('classes', () => {
  test('stack push pop', () => {
    const s = new Stack();
    s.push(1).push(2);
    assert.equal(s.pop(), 2);
    assert.equal(s.size, 1);
    assert.equal(s.peek(), 1);
  });
  test('static members and instanceof', () => {
    assert.equal(Stack.CAPACITY, 3);
    const s = Stack.of(1, 2);
    assert.ok(s instanceof Stack);
    assert.equal(s.size, 2);
    assert.equal(String(s), 'Stack(1, 2)');
    assert.equal(`${s}`, 'Stack(1, 2)');
  });
  test('two instances compare by their fields', () => {
    assert.deepStrictEqual(new Point(1, 2), new Point(1, 2));
    assert.notDeepStrictEqual(new Point(1, 2), new Point(2, 1));
    const p = new Point(1, 2).plus(new Point(3, 4));
    assert.equal(p.x, 4);
    assert.equal(p.y, 6);
    assert.deepEqual({ ...p }, { x: 4, y: 6 });
  });
  test('attribute assignment', () => {
    const p = new Point(0, 0);
    p.x = 5;
    assert.equal(p.x, 5);
    assert.ok('y' in p);
    assert.deepEqual(Object.keys(p), ['x', 'y']);
  });
});

describe('exceptions', () => {
  test('builtin error class', () => {
    assert.throws(() => sol.parseInteger('x1'), TypeError);
    assert.throws(() => sol.parseInteger('x1'), /not an integer/);
    assert.equal(sol.parseInteger('-42'), -42);
  });
  test('custom error class', () => {
    const s = new Stack();
    assert.throws(() => s.pop(), EmptyStackError);
    assert.throws(() => s.pop(), Error);
    assert.throws(() => s.pop(), { name: 'EmptyStackError', code: 'E_EMPTY', message: 'pop from an empty stack' });
    try {
      s.pop();
      assert.fail('no error');
    } catch (e) {
      assert.ok(e instanceof EmptyStackError);
      assert.ok(e instanceof Error);
    }
  });
  test('range error from a method', () => {
    const s = Stack.of(1, 2, 3);
    assert.throws(() => s.push(4), RangeError);
  });
});

describe('callbacks', () => {
  test('predicate from the tests', () => {
    assert.equal(sol.countIf([1, 2, 3, 4, 5], (x) => x % 2 === 1), 3);
  });
  test('identity of a callback across calls', () => {
    const seen = [];
    const fn = (v) => seen.push(v);
    sol.subscribe(fn);
    assert.equal(sol.emit(7), 1);
    assert.equal(sol.unsubscribe(fn), true);
    assert.equal(sol.emit(8), 0);
    assert.deepEqual(seen, [7]);
  });
  test('callback exception reaches the test', () => {
    assert.throws(() => sol.countIf([1], () => { throw new RangeError('no'); }), RangeError);
  });
});

describe('iterators and generators', () => {
  test('infinite generator', () => {
    assert.deepEqual(sol.take(sol.fibonacci(), 7), [0, 1, 1, 2, 3, 5, 8]);
    const g = sol.fibonacci();
    assert.deepEqual(g.next(), { value: 0, done: false });
    assert.equal(g.next().value, 1);
  });
  test('iterating a class instance', () => {
    assert.deepEqual([...Stack.of(1, 2, 3)], [3, 2, 1]);
    const out = [];
    for (const x of Stack.of('a', 'b')) out.push(x);
    assert.deepEqual(out, ['b', 'a']);
  });
  test('iterator of the tests', () => {
    function* gen() { yield 10; yield 20; yield 30; }
    assert.deepEqual(sol.take(gen(), 2), [10, 20]);
  });
});

describe('async', () => {
  test('async function', async () => {
    assert.equal(await sol.delayedDouble(21), 42);
    const all = await Promise.all([sol.delayedDouble(1), sol.delayedDouble(2)]);
    assert.deepEqual(all, [2, 4]);
  });
  test('rejected promise', async () => {
    await assert.rejects(sol.failLater(), EmptyStackError);
  });
  test('async callback of the tests', async () => {
    assert.deepEqual(await sol.mapAsync([1, 2, 3], async (x) => x * 10), [10, 20, 30]);
  });
  test('async generator', async () => {
    const out = [];
    for await (const x of sol.countdown(3)) out.push(x);
    assert.deepEqual(out, [3, 2, 1]);
  });
});

describe('values', () => {
  test('map set date', () => {
    assert.deepEqual(sol.wordIndex('a b a'), new Map([['a', 2], ['b', 1]]));
    assert.deepEqual(sol.uniqueLetters('abba'), new Set(['a', 'b']));
    assert.deepEqual(sol.addDays(new Date('2024-01-30T00:00:00Z'), 2), new Date('2024-02-01T00:00:00Z'));
  });
  test('plain objects undefined and null', () => {
    assert.deepStrictEqual(sol.stats([1, 2, 3]), { count: 3, mean: 2, sum: 6, empty: undefined });
    assert.deepStrictEqual(sol.stats([]), { count: 0, mean: NaN, sum: 0, empty: null });
    assert.deepStrictEqual(sol.nested(), { a: [1, { b: [2, 3] }], c: 'd', e: true, f: null });
  });
  test('special numbers and bigint', () => {
    const [z, nan, inf, ninf, f, big, bi] = sol.special();
    assert.ok(Object.is(z, -0));
    assert.ok(Number.isNaN(nan));
    assert.equal(inf, Infinity);
    assert.equal(ninf, -Infinity);
    assert.equal(f, 0.30000000000000004);
    assert.equal(big, 1152921504606846976);
    assert.equal(bi, 12345678901234567890n);
  });
  test('default export and constants', () => {
    assert.equal(greet('Ada'), 'Hello, Ada!');
    assert.equal(greet(), 'Hello, world!');
    assert.equal(sol.default('x'), 'Hello, x!');
    assert.equal(sol.VERSION, '1.2.0');
  });
  test('state across calls', () => {
    const a = sol.counter();
    assert.equal(sol.counter(), a + 1);
  });
});

describe('output', () => {
  test('console output of the submission', (t) => {
    const lines = [];
    const write = process.stdout.write;
    process.stdout.write = function (chunk, ...rest) {
      lines.push(String(chunk));
      return write.call(this, chunk, ...rest);
    };
    let n;
    try {
      n = sol.report([['a', 1], ['b', 2]]);
    } finally {
      process.stdout.write = write;
    }
    assert.equal(n, 2);
    assert.ok(lines.join('').includes('a: 1\nb: 2\n'));
  });
  test('hidden: stack of strings', () => {
    const s = Stack.of('x', 'y');
    assert.equal(s.pop(), 'y');
    assert.deepEqual([...s], ['x']);
  });
});
