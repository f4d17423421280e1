// Proctor's split runs for JavaScript: the tests and the submission never share a process.
//
// docs/grading.md, "Tamper-proof runs", is the contract; docs/split-protocol.md
// the protocol ("JavaScript values" for what this runtime adds).  The sandbox
// starts two programs for the test step, connected by a stream socket on fd 3:
//
//   harness  (the harness uid: reads the hidden tests, writes the report)
//       node [OPTIONS] proctor_split.mjs harness TESTFILE...
//   program  (the program uid: cannot read either)
//       node proctor_split.mjs program
//
// The harness registers module customization hooks (module.register) and
// then imports the test files itself, so node:test runs them in this
// process, with the step's reporters (Proctor's guard among them).  An
// import, or a require(), of a file the program wrote (owned by anyone but
// root and the harness, or writable by others) gets a stand-in module whose
// exports are the worker's, as data or as proxies; the harness never
// evaluates a byte the program wrote.  The hooks run on a thread of their
// own: they ask the main thread for a stand-in's export names over a
// MessagePort, and the main thread asks the worker over the channel.
//
// The program side is the worker itself (node has no fork): it reads fd 3
// with blocking reads, imports the submission's modules when asked, and lets
// its event loop run one turn after each answer, so that its promises and
// timers progress while the harness polls ("state") a promise it awaits.
// Calls are synchronous and re-entrant both ways (fs.readSync/writeSync):
// a callback of the tests that the submission calls is served while the
// harness waits for the call's answer.
//
// Values cross as data (docs/split-protocol.md, "Values" and "JavaScript
// values"); every other object stays where it was made and crosses as a
// reference.  The harness's proxy of a worker object never decides a
// comparison: node:assert runs here, on the proxy, whose prototype is the
// harness's mirror of the worker's class, so a proxy is never equal to the
// tests' plain value, and two proxies are compared on the own properties
// the worker reports, as data.  When the worker ends or breaks the
// protocol, the harness ends with status 70 and no report.

import fs from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CHANNEL_FD = 3;
const WORK = '/work';
const MAX_BYTES = Number(process.env.PROCTOR_SPLIT_MAX_BYTES) > 0
  ? Number(process.env.PROCTOR_SPLIT_MAX_BYTES) : 16 << 20;
const MAX_DEPTH = 100;
const ABORT_STATUS = 70;
const NOT_STARTED_STATUS = 71;
const SCHEME = 'proctor-split:';
const TEST_URL = 'proctor-split-test:node-test';
const SELF = fileURLToPath(import.meta.url);
const KEY = Symbol.for('proctor.split');

class ProtocolError extends Error {}
class ChannelError extends Error {}

// ---- framing (blocking) ------------------------------------------------------

const pause = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if (e.code === 'EAGAIN') { Atomics.wait(pause, 0, 0, 1); continue; }
      throw new ChannelError(String(e.message));
    }
  }
}

function readExact(fd, n) {
  const buf = Buffer.alloc(n);
  let off = 0;
  while (off < n) {
    let k;
    try {
      k = fs.readSync(fd, buf, off, n - off, null);
    } catch (e) {
      if (e.code === 'EAGAIN') { Atomics.wait(pause, 0, 0, 1); continue; }
      throw new ChannelError(String(e.message));
    }
    if (k === 0) throw new ChannelError('end of file');
    off += k;
  }
  return buf;
}

const DEBUG = process.env.PROCTOR_SPLIT_DEBUG ? (s) => fs.writeSync(2, `[${process.pid}] ${s}\n`) : null;

function send(fd, obj) {
  if (DEBUG) DEBUG('send ' + JSON.stringify(obj).slice(0, 300));
  const body = Buffer.from(JSON.stringify(obj), 'utf8');
  if (body.length > MAX_BYTES) {
    throw new RangeError(`a value of ${body.length} bytes is more than the ${MAX_BYTES} a call may carry`);
  }
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  writeAll(fd, Buffer.concat([head, body]));
}

function recv(fd) {
  const n = readExact(fd, 4).readUInt32BE(0);
  if (n > MAX_BYTES) throw new ProtocolError(`a message of ${n} bytes is more than the ${MAX_BYTES} allowed`);
  let obj;
  try {
    obj = JSON.parse(readExact(fd, n).toString('utf8'));
  } catch (e) {
    if (e instanceof ChannelError) throw e;
    throw new ProtocolError('not a message');
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new ProtocolError('not a message');
  if (DEBUG) DEBUG('recv ' + JSON.stringify(obj).slice(0, 300));
  return obj;
}

// ---- floats as C99 hex (Python's float.hex) -------------------------------------

function floatHex(x) {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  const hi = dv.getUint32(0), lo = dv.getUint32(4);
  const sign = hi >>> 31 ? '-' : '';
  const exp = (hi >>> 20) & 0x7ff;
  const mant = ((BigInt(hi & 0xfffff) << 32n) | BigInt(lo)).toString(16).padStart(13, '0');
  if (exp === 0 && mant === '0000000000000') return `${sign}0x0.0p+0`;
  if (exp === 0) return `${sign}0x0.${mant}p-1022`;
  const e = exp - 1023;
  return `${sign}0x1.${mant}p${e >= 0 ? '+' : ''}${e}`;
}

function parseFloatHex(s) {
  if (typeof s !== 'string') throw new ProtocolError('a float that is not text');
  const t = s.trim().toLowerCase();
  if (t === 'nan' || t === '-nan' || t === '+nan') return NaN;
  if (t === 'inf' || t === '+inf' || t === 'infinity') return Infinity;
  if (t === '-inf' || t === '-infinity') return -Infinity;
  const m = /^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?p([+-]?\d+)$/.exec(t);
  if (!m || (m[2] + (m[3] ?? '')).length === 0 || (m[2] + (m[3] ?? '')).length > 40) {
    throw new ProtocolError('not a hex float');
  }
  const digits = (m[2] + (m[3] ?? '')).replace(/^0+/, '') || '0';
  let v = Number(BigInt('0x' + digits));
  let k = Number(m[4]) - 4 * (m[3] ?? '').length;
  while (k > 0 && v !== Infinity) { const s2 = Math.min(k, 1000); v *= 2 ** s2; k -= s2; }
  while (k < 0 && v !== 0) { const s2 = Math.max(k, -1000); v *= 2 ** s2; k -= s2; }
  return m[1] === '-' ? -v : v;
}

// ---- values -----------------------------------------------------------------------

const TYPED = {
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array, Buffer,
};
const BUILTIN_ERRORS = {
  Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError,
};
const mapEntries = Map.prototype.entries;
const setValues = Set.prototype.values;
const dateValue = Date.prototype.getTime;
const typedTag = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
const isArray = Array.isArray;
const getProto = Object.getPrototypeOf;

function isPlain(v) {
  const p = getProto(v);
  return p === Object.prototype || p === null;
}

// A class's description (docs/split-protocol.md): a builtin's name, else
// the sender's number for it, its name and its base.
function classInfo(codec, ctor, depth = 0) {
  if (typeof ctor !== 'function' || depth > 20) return { builtin: 'Object' };
  for (const [name, c] of Object.entries(BUILTIN_ERRORS)) if (c === ctor) return { builtin: name };
  if (ctor === Object || ctor === Function || ctor === Map || ctor === Set || ctor === Promise) {
    return { builtin: ctor.name };
  }
  let name = '';
  try { name = typeof ctor.name === 'string' ? ctor.name.slice(0, 200) : ''; } catch { name = ''; }
  const parent = getProto(ctor);
  const bases = typeof parent === 'function' && parent !== Function.prototype
    ? [classInfo(codec, parent, depth + 1)] : [];
  return { id: codec.exportId(ctor), name, qualname: name, module: '', bases };
}

function isErrorClass(ctor) {
  for (let c = ctor, i = 0; typeof c === 'function' && i < 50; c = getProto(c), i++) {
    if (c === Error) return true;
  }
  return false;
}

class Codec {
  constructor(side) {
    this.side = side; // 'harness' or 'worker'
    this.exported = new Map(); // our object -> number
    this.table = new Map(); // number -> our object
    this.proxies = new Map(); // their number -> proxy
    this.next = 1;
    this.promiseState = new WeakMap(); // our exported promises: [0] pending, [1, v], [2, e]
    this.makeProxy = null;
    this.proxyIds = new WeakMap(); // our proxy -> their number
  }

  exportId(obj) {
    let n = this.exported.get(obj);
    if (n === undefined) {
      n = this.next++;
      this.exported.set(obj, n);
      this.table.set(n, obj);
      if (obj instanceof Promise) {
        const st = [0];
        this.promiseState.set(obj, st);
        obj.then((v) => { st[0] = 1; st[1] = v; }, (e) => { st[0] = 2; st[1] = e; });
      }
    }
    return n;
  }

  local(n) {
    if (!this.table.has(n)) throw new ProtocolError('a reference to no object of ours');
    return this.table.get(n);
  }

  describe(v) {
    if (v instanceof Promise) return { kind: 'promise' };
    if (typeof v === 'function') {
      let proto;
      try { proto = Object.getOwnPropertyDescriptor(v, 'prototype'); } catch { proto = undefined; }
      const isClass = proto && !proto.writable; // class constructors' prototype is read-only
      let name = '';
      try { name = typeof v.name === 'string' ? v.name.slice(0, 200) : ''; } catch { name = ''; }
      if (isClass || isErrorClass(v)) {
        return { kind: 'class', class: classInfo(this, v), exception: isErrorClass(v) || undefined };
      }
      return { kind: 'function', name };
    }
    let ctor;
    try {
      const p = getProto(v);
      ctor = p && Object.getOwnPropertyDescriptor(p, 'constructor')?.value;
    } catch { ctor = undefined; }
    return { kind: 'object', class: classInfo(this, ctor) };
  }

  encode(v, depth = 0) {
    if (depth > MAX_DEPTH) throw new RangeError('a value nested deeper than 100 levels');
    switch (typeof v) {
      case 'undefined': return ['u'];
      case 'boolean': case 'string': return v;
      case 'number':
        return Number.isSafeInteger(v) && !Object.is(v, -0) ? v : ['f', floatHex(v)];
      case 'bigint': return ['i', (v < 0n ? '-' : '') + (v < 0n ? -v : v).toString(16)];
      case 'symbol': throw new TypeError('a Symbol cannot cross to the other process');
      default: break;
    }
    if (v === null) return null;
    if (this.proxyIds.has(v)) return ['o', this.proxyIds.get(v)];
    if (typeof v === 'function') return ['r', this.exportId(v), this.describe(v)];
    const d = depth + 1;
    if (isArray(v)) {
      const out = [];
      for (let i = 0; i < v.length; i++) out.push(this.encode(v[i], d));
      return ['l', out];
    }
    if (v instanceof Map) {
      const out = [];
      for (const [k, x] of mapEntries.call(v)) out.push([this.encode(k, d), this.encode(x, d)]);
      return ['M', out];
    }
    if (v instanceof Set) {
      const out = [];
      for (const x of setValues.call(v)) out.push(this.encode(x, d));
      return ['s', out];
    }
    if (v instanceof Date) {
      const t = dateValue.call(v);
      return ['Dt', Number.isNaN(t) ? null : t];
    }
    if (v instanceof RegExp) return ['re', String(v.source), String(v.flags)];
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      const type = Buffer.isBuffer(v) ? 'Buffer' : typedTag.call(v);
      const bytes = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      return ['ta', type, bytes.toString('base64')];
    }
    if (v instanceof ArrayBuffer) return ['b', Buffer.from(v).toString('base64')];
    if (isPlain(v)) {
      const out = [];
      for (const k of Object.keys(v)) out.push([k, this.encode(v[k], d)]);
      return getProto(v) === null ? ['O', out, 1] : ['O', out];
    }
    return ['r', this.exportId(v), this.describe(v)];
  }

  decode(w, depth = 0) {
    if (depth > MAX_DEPTH) throw new ProtocolError('a value nested deeper than 100 levels');
    if (w === null || typeof w === 'boolean' || typeof w === 'string') return w;
    if (typeof w === 'number') {
      if (!Number.isSafeInteger(w)) throw new ProtocolError('a number beyond 2^53');
      return w;
    }
    if (!isArray(w) || typeof w[0] !== 'string') throw new ProtocolError('not a value');
    const d = depth + 1;
    const list = (x) => { if (!isArray(x)) throw new ProtocolError('not a list'); return x; };
    switch (w[0]) {
      case 'u': return undefined;
      case 'f': return parseFloatHex(w[1]);
      case 'i': {
        if (typeof w[1] !== 'string' || !/^-?[0-9a-fA-F]{1,20000}$/.test(w[1])) throw new ProtocolError('not an integer');
        const neg = w[1][0] === '-';
        const b = BigInt('0x' + (neg ? w[1].slice(1) : w[1]));
        return neg ? -b : b;
      }
      case 'l': case 't': case 'q': case 'dk': case 'dv': return list(w[1]).map((x) => this.decode(x, d));
      case 's': case 'S': return new Set(list(w[1]).map((x) => this.decode(x, d)));
      case 'M': case 'd': case 'OrderedDict': case 'Counter': case 'di':
        return new Map(list(w[1]).map((kv) => [this.decode(list(kv)[0], d), this.decode(kv[1], d)]));
      case 'O': {
        const o = w[2] ? Object.create(null) : {};
        for (const kv of list(w[1])) {
          if (typeof list(kv)[0] !== 'string') throw new ProtocolError('an object key that is not text');
          Object.defineProperty(o, kv[0], { value: this.decode(kv[1], d), writable: true, enumerable: true, configurable: true });
        }
        return o;
      }
      case 'Dt': return new Date(w[1] === null ? NaN : Number(w[1]));
      case 're': return new RegExp(String(w[1]), String(w[2]));
      case 'b': {
        const b = Buffer.from(String(w[1]), 'base64');
        return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
      }
      case 'ta': {
        const T = Object.hasOwn(TYPED, w[1]) ? TYPED[w[1]] : null;
        if (!T) throw new ProtocolError('not a typed array');
        const b = Buffer.from(String(w[2]), 'base64');
        if (T === Buffer) return b;
        const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
        return new T(ab, 0, ab.byteLength / T.BYTES_PER_ELEMENT);
      }
      case 'r': {
        if (!Number.isSafeInteger(w[1])) throw new ProtocolError('not a reference');
        if (this.proxies.has(w[1])) return this.proxies.get(w[1]);
        const p = this.makeProxy(w[1], w[2] ?? {});
        this.proxies.set(w[1], p);
        return p;
      }
      case 'o': return this.local(w[1]);
      case 'c': case 'F': case 'D': case 'T': case 'td': case 'p': case 'R': case 'sl': case 'E':
      case 'nt':
        throw new ProtocolError(`a value of tag ${w[0]} has no JavaScript form`);
      default: throw new ProtocolError('an unknown tag');
    }
  }
}

// ---- exceptions -----------------------------------------------------------------------

function describeException(codec, e, quiet) {
  if (!(e instanceof Error) && !(e !== null && typeof e === 'object' && typeof e.message === 'string' && typeof e.name === 'string')) {
    if (quiet) return { type: { builtin: 'Error' }, message: '', args: null };
    let value;
    try { value = codec.encode(e); } catch { value = null; }
    return { type: { builtin: 'Error' }, message: 'a thrown value', args: null, value };
  }
  let ctor;
  try { ctor = getProto(e)?.constructor; } catch { ctor = undefined; }
  const type = classInfo(codec, typeof ctor === 'function' ? ctor : Error);
  if (quiet) return { type, message: '', args: null };
  const out = { type, message: '', args: null };
  try { out.message = String(e.message).slice(0, 100000); } catch { /* none */ }
  try { if (typeof e.name === 'string') out.name = e.name.slice(0, 200); } catch { /* none */ }
  try { if (typeof e.code === 'string' || typeof e.code === 'number') out.code = e.code; } catch { /* none */ }
  try {
    const props = [];
    for (const k of Object.keys(e)) {
      if (k === 'message' || k === 'name' || k === 'code' || k === 'stack') continue;
      try { props.push([k, codec.encode(e[k])]); } catch { /* not data: left out */ }
    }
    if (props.length) out.props = props;
  } catch { /* none */ }
  return out;
}

class ExceptionMirror {
  constructor() {
    this.classes = new Map(); // the other side's class number -> our class
  }

  cls(info, depth = 0) {
    if (info === null || typeof info !== 'object' || depth > 20) return Error;
    if (typeof info.builtin === 'string') {
      return Object.hasOwn(BUILTIN_ERRORS, info.builtin) ? BUILTIN_ERRORS[info.builtin] : Error;
    }
    const key = Number.isSafeInteger(info.id) ? info.id : `${info.module}:${info.qualname}`;
    let c = this.classes.get(key);
    if (c) return c;
    const base = isArray(info.bases) && info.bases.length ? this.cls(info.bases[0], depth + 1) : Error;
    const name = typeof info.name === 'string' ? info.name : 'Error';
    const Base = isErrorClass(base) ? base : Error;
    c = { [name]: class extends Base {} }[name];
    Object.defineProperty(c.prototype, 'name', { value: name, writable: true, configurable: true });
    this.classes.set(key, c);
    return c;
  }

  build(codec, desc) {
    if (desc === null || typeof desc !== 'object') return new Error('an exception of the other side');
    if (Object.hasOwn(desc, 'value') && desc.value !== undefined) {
      try { return codec.decode(desc.value); } catch { /* fall through */ }
    }
    const C = this.cls(desc.type);
    const e = new C(typeof desc.message === 'string' ? desc.message : '');
    if (typeof desc.name === 'string' && desc.name !== e.name) {
      Object.defineProperty(e, 'name', { value: desc.name, writable: true, configurable: true });
    }
    if (typeof desc.code === 'string' || typeof desc.code === 'number') e.code = desc.code;
    if (isArray(desc.props)) {
      for (const kv of desc.props) {
        if (isArray(kv) && typeof kv[0] === 'string' && kv[0] !== '__proto__') {
          try { e[kv[0]] = codec.decode(kv[1]); } catch { /* left out */ }
        }
      }
    }
    return e;
  }
}

// ---- endpoints ---------------------------------------------------------------------------

class Endpoint {
  constructor(fd, codec, handle, quiet) {
    this.fd = fd;
    this.codec = codec;
    this.handle = handle;
    this.quiet = quiet;
    this.seq = 0;
    this.mirror = new ExceptionMirror();
    this.takeOutput = () => ({});
    this.onOutput = () => {};
    this.onServe = null; // the worker: before it answers the harness
  }

  request(op, fields) {
    const n = ++this.seq;
    const msg = { op, n, ...fields, ...this.takeOutput() };
    send(this.fd, msg);
    for (;;) {
      const m = recv(this.fd);
      if (Object.hasOwn(m, 'op')) {
        this.serveOne(m);
        continue;
      }
      if (m.re !== n) throw new ProtocolError('an answer out of order');
      this.onOutput(m.out, m.err);
      if (Object.hasOwn(m, 'exc')) throw this.mirror.build(this.codec, m.exc);
      return this.codec.decode(m.ok);
    }
  }

  reply(n, value, exc) {
    let msg;
    if (exc === undefined) {
      try {
        msg = { re: n, ok: this.codec.encode(value) };
      } catch (e) {
        msg = { re: n, exc: describeException(this.codec, e, false) };
      }
    } else {
      msg = { re: n, exc: describeException(this.codec, exc, this.quiet) };
    }
    Object.assign(msg, this.takeOutput());
    try {
      send(this.fd, msg);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      send(this.fd, { re: n, exc: { type: { builtin: 'RangeError' }, message: String(e.message).slice(0, 2000), args: null } });
    }
  }

  serveOne(m) {
    this.onOutput(m.out, m.err);
    if (this.onServe) this.onServe();
    let value;
    try {
      value = this.handle(m);
    } catch (e) {
      if (e instanceof ProtocolError || e instanceof ChannelError) throw e;
      this.reply(m.n, undefined, e);
      return;
    }
    this.reply(m.n, value);
  }
}

function field(m, name) {
  if (!Object.hasOwn(m, name)) throw new ProtocolError(`a request without ${name}`);
  return m[name];
}

function promiseState(codec, p) {
  const st = codec.promiseState.get(p);
  if (!st) throw new TypeError('not a promise');
  if (st[0] === 0) return [0];
  if (st[0] === 1) return [1, st[1]];
  throw st[1];
}

// ---- the program side: the worker ------------------------------------------------------

const OUT_CAP = MAX_BYTES >> 2;

function workerMain() {
  const codec = new Codec('worker');
  const out = { out: '', err: '' };
  const capture = (key, stream) => {
    stream.write = function write(chunk, encoding, cb) {
      let s = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      out[key] = (out[key] + s).slice(-OUT_CAP);
      if (typeof encoding === 'function') encoding();
      else if (typeof cb === 'function') cb();
      return true;
    };
  };
  capture('out', process.stdout);
  capture('err', process.stderr);
  const modules = new Map();
  const pendingHarness = new Set(); // [proxy-target number, resolve, reject]
  let ep;

  // The harness's objects, used as a function uses what it is handed.
  const DENIED = new Set(['constructor', '__proto__', 'prototype', '__defineGetter__',
    '__defineSetter__', '__lookupGetter__', '__lookupSetter__', 'caller', 'arguments']);
  codec.makeProxy = (n, desc) => {
    if (desc.kind === 'promise') {
      let resolve, reject;
      const p = new Promise((a, b) => { resolve = a; reject = b; });
      pendingHarness.add([n, resolve, reject]);
      codec.proxyIds.set(p, n);
      return p;
    }
    const target = desc.kind === 'function' ? function () {} : {};
    const p = new Proxy(target, {
      apply: (_t, self, args) => ep.request('call', { target: ['o', n], this: codec.encode(self), args: codec.encode(args) }),
      construct: () => { throw new TypeError("the tests' function cannot be constructed here"); },
      get: (_t, name) => {
        if (name === Symbol.iterator) return function () { return ep.request('unary', { target: ['o', n], name: 'iter' }); };
        if (name === Symbol.asyncIterator) return function () { return ep.request('unary', { target: ['o', n], name: 'aiter' }); };
        if (name === Symbol.toPrimitive) return (hint) => ep.request('unary', { target: ['o', n], name: 'primitive', hint: String(hint) });
        if (typeof name !== 'string' || name === 'then') return undefined;
        if (DENIED.has(name)) return undefined;
        return ep.request('getattr', { target: ['o', n], name });
      },
      set: () => { throw new TypeError("the tests' object cannot be changed here"); },
      has: () => false,
      ownKeys: () => Reflect.ownKeys(target),
      getOwnPropertyDescriptor: (t, k) => Reflect.getOwnPropertyDescriptor(t, k),
      defineProperty: () => false,
      deleteProperty: () => false,
      getPrototypeOf: () => (desc.kind === 'function' ? Function.prototype : Object.prototype),
      setPrototypeOf: () => false,
    });
    codec.proxyIds.set(p, n);
    return p;
  };

  const pollHarness = () => {
    for (const entry of [...pendingHarness]) {
      let st;
      try {
        st = ep.request('state', { target: ['o', entry[0]] });
      } catch (e) {
        if (e instanceof ProtocolError || e instanceof ChannelError) throw e;
        pendingHarness.delete(entry);
        entry[2](e);
        continue;
      }
      if (isArray(st) && st[0] === 1) {
        pendingHarness.delete(entry);
        entry[1](st[1]);
      }
    }
  };

  const handle = (m) => {
    const op = m.op;
    const target = () => codec.decode(field(m, 'target'));
    const name = () => {
      const s = field(m, 'name');
      if (typeof s !== 'string') throw new ProtocolError('a name that is not text');
      return s;
    };
    switch (op) {
      case 'import': {
        const file = name();
        if (!modules.has(file)) throw new Error('the module was not imported before the call');
        const ns = modules.get(file);
        if (ns instanceof Error) throw ns;
        return ns;
      }
      case 'require': {
        const file = name();
        const ns = modules.get('require:' + file);
        if (ns === undefined) throw new Error('the module was not required before the call');
        if (ns instanceof Error) throw ns;
        return ns;
      }
      case 'getattr': return target()[name()];
      case 'setattr': target()[name()] = codec.decode(field(m, 'value')); return undefined;
      case 'delattr': delete target()[name()]; return undefined;
      case 'has': return name() in target();
      case 'own': {
        const t = target();
        const desc = Object.getOwnPropertyDescriptor(t, name());
        if (!desc) return null;
        return [Boolean(desc.enumerable), desc.get || desc.set ? t[name()] : desc.value];
      }
      case 'keys': return Object.getOwnPropertyNames(target()).map((k) => [k, Object.prototype.propertyIsEnumerable.call(target(), k)]);
      case 'call': {
        const args = codec.decode(field(m, 'args'));
        return Reflect.apply(target(), m.this === undefined ? undefined : codec.decode(m.this), isArray(args) ? args : []);
      }
      case 'new': {
        const args = codec.decode(field(m, 'args'));
        return Reflect.construct(target(), isArray(args) ? args : []);
      }
      case 'unary': return unary(target(), name(), m.hint);
      case 'state': return promiseState(codec, target());
      default: throw new ProtocolError(`a request the worker does not serve: ${String(op).slice(0, 40)}`);
    }
  };

  ep = new Endpoint(CHANNEL_FD, codec, handle, false);
  ep.takeOutput = () => {
    const r = {};
    if (out.out) r.out = out.out;
    if (out.err) r.err = out.err;
    out.out = '';
    out.err = '';
    return r;
  };
  ep.onServe = pollHarness;

  // import and require load the submission's modules, asynchronously, at
  // the top of the stack only (the harness asks before it uses them).
  const load = async (m) => {
    const file = typeof m.name === 'string' ? m.name : '';
    const key = m.op === 'require' ? 'require:' + file : file;
    if (!modules.has(key)) {
      try {
        if (!path.isAbsolute(file)) throw new Error('not an absolute path');
        if (m.op === 'require') {
          const { createRequire } = await import('node:module');
          modules.set(key, createRequire(path.join(WORK, 'x.js'))(file));
        } else {
          const ns = await import(pathToFileURL(file).href);
          const plain = Object.create(null);
          for (const k of Object.keys(ns)) plain[k] = ns[k];
          modules.set(key, plain);
        }
      } catch (e) {
        modules.set(key, e instanceof Error ? e : new Error(String(e)));
      }
    }
  };

  const serve = async () => {
    try {
      send(CHANNEL_FD, { ready: true });
      for (;;) {
        let m;
        try {
          m = recv(CHANNEL_FD);
        } catch (e) {
          if (e instanceof ChannelError) process.reallyExit(0); // the harness is done
          throw e;
        }
        if (!Object.hasOwn(m, 'op')) throw new ProtocolError('an answer to no request');
        if (m.op === 'import' || m.op === 'require') await load(m);
        ep.serveOne(m);
        // One turn of the event loop: the submission's promises and timers go on.
        await new Promise((r) => setImmediate(r));
      }
    } catch (e) {
      try { fs.writeSync(2, `proctor_split worker: ${String(e && e.message)}\n`); } catch { /* none */ }
      process.reallyExit(ABORT_STATUS);
    }
  };
  process.chdir(WORK);
  serve();
}

function unary(t, name, hint) {
  switch (name) {
    case 'iter': return t[Symbol.iterator]();
    case 'aiter': return typeof t[Symbol.asyncIterator] === 'function' ? t[Symbol.asyncIterator]() : t[Symbol.iterator]();
    case 'str': return String(t);
    case 'primitive': {
      const h = hint === 'string' || hint === 'number' ? hint : 'default';
      const f = t[Symbol.toPrimitive];
      if (typeof f === 'function') return primitiveOnly(f.call(t, h));
      const order = h === 'string' ? ['toString', 'valueOf'] : ['valueOf', 'toString'];
      for (const k of order) {
        const g = t[k];
        if (typeof g === 'function') {
          const r = g.call(t);
          if (r === null || (typeof r !== 'object' && typeof r !== 'function')) return r;
        }
      }
      throw new TypeError('Cannot convert object to primitive value');
    }
    default: throw new ProtocolError('an operation the side does not serve');
  }
}

function primitiveOnly(r) {
  if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
    throw new TypeError('Cannot convert object to primitive value');
  }
  return r;
}

// ---- the harness side ----------------------------------------------------------------------

let session = null;
let stderrFd = 2;

function abort(why, status = ABORT_STATUS) {
  try {
    fs.writeSync(stderrFd, `proctor_split: ${why}; the test run cannot go on\n`);
  } catch { /* nothing may stop the exit */ }
  if (typeof process.reallyExit === 'function') process.reallyExit(status);
  process.exit(status);
}

function guarded(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ChannelError) abort("the submission's process ended during a call from the tests");
    if (e instanceof ProtocolError) abort(`the submission's process broke the protocol (${e.message})`);
    throw e;
  }
}

// Functions that turn text into code: never handed to the worker.
const CODE_MAKERS = new Set([Function, eval, getProto(async function () {}).constructor,
  getProto(function* () {}).constructor, getProto(async function* () {}).constructor]);
const SAFE_TARGET_KEYS = new Set(['prototype', 'length', 'name', 'caller', 'arguments']);

class Session {
  constructor() {
    const codec = new Codec('harness');
    this.codec = codec;
    this.protos = new Map(); // worker class number -> [mirror constructor]
    this.pending = []; // [number, resolve, reject]
    this.polling = false;
    codec.makeProxy = (n, desc) => this.makeProxy(n, desc);
    this.ep = new Endpoint(CHANNEL_FD, codec, (m) => this.serveWorker(m), true);
    this.ep.onOutput = (o, e) => {
      if (typeof o === 'string' && o) process.stdout.write(o);
      if (typeof e === 'string' && e) process.stderr.write(e);
    };
    let hello;
    try {
      hello = recv(CHANNEL_FD);
    } catch {
      abort('the program side did not start', NOT_STARTED_STATUS);
    }
    if (!hello || hello.ready !== true) abort('the program side did not start', NOT_STARTED_STATUS);
  }

  request(op, fields) {
    return guarded(() => this.ep.request(op, fields));
  }

  // The harness's mirror of a worker class: a constructor whose prototype
  // is what instanceof and deepStrictEqual see; an exception class is the
  // very class the worker's exceptions of that class are raised as.
  mirrorClass(info, depth = 0) {
    if (!info || typeof info !== 'object' || depth > 20) return Object;
    if (typeof info.builtin === 'string') {
      if (Object.hasOwn(BUILTIN_ERRORS, info.builtin)) return BUILTIN_ERRORS[info.builtin];
      return Object;
    }
    if (!Number.isSafeInteger(info.id)) return Object;
    let c = this.protos.get(info.id);
    if (c) return c;
    const base = isArray(info.bases) && info.bases.length ? this.mirrorClass(info.bases[0], depth + 1) : Object;
    const name = typeof info.name === 'string' ? info.name : 'Object';
    if (isErrorClass(base)) {
      c = this.ep.mirror.cls(info);
    } else {
      c = { [name]: function () {} }[name];
      c.prototype = Object.create(base === Object ? Object.prototype : base.prototype, {
        constructor: { value: c, writable: true, configurable: true },
      });
    }
    this.protos.set(info.id, c);
    return c;
  }

  makeProxy(n, desc) {
    const ref = ['o', n];
    const codec = this.codec;
    if (desc.kind === 'promise') {
      const p = new Promise((resolve, reject) => this.pending.push([n, resolve, reject]));
      codec.proxyIds.set(p, n);
      this.poll();
      return p;
    }
    let target;
    if (desc.kind === 'class') {
      const m = this.mirrorClass(desc.class);
      target = m === Object ? function () {} : m;
    } else if (desc.kind === 'function') {
      const name = typeof desc.name === 'string' ? desc.name : '';
      target = { [name]: function () {} }[name];
    } else {
      const m = this.mirrorClass(desc.class);
      target = Object.create(m === Object ? Object.prototype : m.prototype);
    }
    const callable = typeof target === 'function';
    const self = this;
    const proxy = new Proxy(target, {
      apply: (_t, thisArg, args) => self.request('call', { target: ref, this: codec.encode(thisArg), args: codec.encode(args) }),
      construct: (_t, args) => self.request('new', { target: ref, args: codec.encode(args) }),
      get: (t, name, receiver) => {
        if (name === KEY) return n;
        if (typeof name === 'symbol') {
          if (name === Symbol.iterator) {
            return function () { return self.request('unary', { target: ref, name: 'iter' }); };
          }
          if (name === Symbol.asyncIterator) {
            return function () { return self.request('unary', { target: ref, name: 'aiter' }); };
          }
          if (name === Symbol.toPrimitive) {
            return (hint) => self.request('unary', { target: ref, name: 'primitive', hint: String(hint) });
          }
          return Reflect.get(t, name);
        }
        if (callable && SAFE_TARGET_KEYS.has(name)) {
          const d = Reflect.getOwnPropertyDescriptor(t, name);
          if (d && !d.configurable) return t[name];
        }
        if (name === 'then') return undefined; // a proxy is not a thenable
        return self.request('getattr', { target: ref, name });
      },
      set: (_t, name, value) => {
        if (typeof name !== 'string') return false;
        self.request('setattr', { target: ref, name, value: codec.encode(value) });
        return true;
      },
      deleteProperty: (_t, name) => {
        if (typeof name !== 'string') return false;
        self.request('delattr', { target: ref, name });
        return true;
      },
      has: (_t, name) => (typeof name === 'string' ? self.request('has', { target: ref, name }) : false),
      ownKeys: (t) => {
        if (callable) return Reflect.ownKeys(t);
        const keys = self.request('keys', { target: ref });
        return isArray(keys) ? keys.map((kv) => String(kv[0])) : [];
      },
      getOwnPropertyDescriptor: (t, name) => {
        if (callable || typeof name !== 'string') return Reflect.getOwnPropertyDescriptor(t, name);
        const r = self.request('own', { target: ref, name });
        if (!isArray(r)) return undefined;
        return { value: r[1], writable: true, enumerable: Boolean(r[0]), configurable: true };
      },
      defineProperty: () => false,
      setPrototypeOf: () => false,
    });
    codec.proxyIds.set(proxy, n);
    return proxy;
  }

  // The worker's promises the tests await: polled ("state") while the
  // harness's event loop runs, so neither side blocks the other's.
  poll() {
    if (this.polling) return;
    this.polling = true;
    let delay = 0;
    const tick = () => {
      let settled = false;
      for (const entry of [...this.pending]) {
        let st;
        try {
          st = this.request('state', { target: ['o', entry[0]] });
        } catch (e) {
          this.pending.splice(this.pending.indexOf(entry), 1);
          entry[2](e);
          settled = true;
          continue;
        }
        if (isArray(st) && st[0] === 1) {
          this.pending.splice(this.pending.indexOf(entry), 1);
          entry[1](st[1]);
          settled = true;
        }
      }
      if (!this.pending.length) { this.polling = false; return; }
      delay = settled ? 0 : Math.min(delay ? delay * 2 : 1, 8);
      setTimeout(tick, delay);
    };
    setImmediate(tick);
  }

  // What the worker may ask of the tests' objects: call the functions it
  // was handed, iterate, convert, await, and read the properties of an
  // object that is not a function (never its constructor or prototype).
  serveWorker(m) {
    const codec = this.codec;
    const target = codec.decode(field(m, 'target'));
    switch (m.op) {
      case 'call': {
        if (typeof target !== 'function') throw new TypeError('not a function');
        const args = codec.decode(field(m, 'args'));
        return Reflect.apply(target, m.this === undefined ? undefined : codec.decode(m.this), isArray(args) ? args : []);
      }
      case 'getattr': {
        const name = field(m, 'name');
        if (typeof name !== 'string' || typeof target === 'function' ||
            ['constructor', '__proto__', 'prototype', '__defineGetter__', '__defineSetter__',
              '__lookupGetter__', '__lookupSetter__'].includes(name)) {
          throw new TypeError(`the tests' object's ${String(name).slice(0, 40)} is not the submission's to read`);
        }
        const v = target[name];
        if (CODE_MAKERS.has(v)) throw new TypeError("not the submission's to read");
        return v;
      }
      case 'unary': {
        const name = field(m, 'name');
        if (name === 'primitive' || name === 'iter' || name === 'aiter') return unary(target, name, m.hint);
        throw new ProtocolError('an operation the harness does not serve');
      }
      case 'state': return promiseState(codec, target);
      default: throw new ProtocolError(`a request the harness does not serve: ${String(m.op).slice(0, 40)}`);
    }
  }

  // A stand-in for the program's module `file`: the worker imports it
  // (asynchronously, at the top of its stack) and sends its exports.
  module(file, how) {
    const key = how + ':' + file;
    if (!this.modules) this.modules = new Map();
    if (!this.modules.has(key)) {
      try {
        this.modules.set(key, [true, this.request(how, { name: file })]);
      } catch (e) {
        this.modules.set(key, [false, e]);
      }
    }
    const [ok, v] = this.modules.get(key);
    if (!ok) throw v;
    return v;
  }
}

// What an exception says, as text, whatever it is (a mirror of one of the
// submission's, a proxy, a value of any kind): never throws.
function describeError(e) {
  try {
    if (e instanceof Error) return `${e.name}: ${e.message}`;
    return `a value thrown: ${String(e)}`;
  } catch {
    return 'an exception that cannot be shown';
  }
}

function getSession() {
  if (!session) session = new Session();
  return session;
}

// Whether the program can have written or changed the file (or the link
// there): owned by anyone but root and the harness, or writable by others.
function programWrote(file) {
  let link, st;
  try {
    link = fs.lstatSync(file);
    st = fs.statSync(file);
  } catch {
    return false;
  }
  const me = process.geteuid();
  return (link.uid !== 0 && link.uid !== me) || (st.uid !== 0 && st.uid !== me) || (st.mode & 0o022) !== 0;
}

// Whether the program steered a resolution that ended in a file of root's
// or the harness's: the path as the tests wrote it passes, below /work,
// through a link or a file or directory of the program's (a symbolic link
// named like the solution to a hidden helper), or the file has more than
// one name there (a hard link to a hidden file); a bare specifier may be
// found in a package directory of the program's (node_modules, $HOME's
// .node_modules or .node_libraries, a package.json's "imports").  Then the
// file is the program's choice, never loaded here as the tests' own.
function programSteered(asWritten, bare) {
  const owned = (p) => {
    let st;
    try { st = fs.lstatSync(p); } catch { return false; }
    return st.isSymbolicLink() || (st.uid !== 0 && st.uid !== process.geteuid()) || (st.mode & 0o022) !== 0;
  };
  if (bare) {
    const first = bare.startsWith('@') ? bare.split('/').slice(0, 2).join('/') : bare.split('/')[0];
    for (const dir of ['node_modules', '.node_modules', '.node_libraries']) {
      if (owned(path.join(WORK, dir)) || (first && owned(path.join(WORK, dir, first)))) return true;
    }
    return bare.startsWith('#') && owned(path.join(WORK, 'package.json'));
  }
  if (typeof asWritten !== 'string' || !path.isAbsolute(asWritten)) return false;
  const abs = path.normalize(asWritten);
  if (abs !== WORK && !abs.startsWith(WORK + '/')) return false;
  let p = WORK;
  for (const part of abs.slice(WORK.length + 1).split('/').filter(Boolean)) {
    p = path.join(p, part);
    if (owned(p)) return true;
  }
  try {
    const st = fs.lstatSync(abs);
    if (st.isFile() && st.nlink > 1) return true;
  } catch { /* not there: nothing steered it */ }
  return false;
}

function isBare(specifier) {
  return !specifier.startsWith('./') && !specifier.startsWith('../') && !specifier.startsWith('/') &&
    !specifier.startsWith('file:') && !specifier.startsWith('node:') && !specifier.startsWith('data:') &&
    specifier !== '.' && specifier !== '..';
}

// ---- node:test, hidden tests last ----------------------------------------------------------

// The manifest's visible tests as grade.c passes them (one a line, NAME or
// NAME<tab>CLASSNAME), or null: every test visible, or too many names.
function visibleTests() {
  const text = process.env.PROCTOR_SPLIT_VISIBLE;
  if (text === undefined) return null;
  const out = [];
  for (const line of text.split('\n')) {
    const [name, classname] = line.split('\t');
    if (name) out.push([name, classname || null]);
  }
  return out;
}

function paramSuffix(s) {
  if (s.length < 2) return false;
  if (s[0] === '[') return s.endsWith(']');
  if (s[0] !== '(') return false;
  return s.endsWith(')') || (s.endsWith(']') && s.includes(')['));
}

function isListed(listed, name, classname) {
  for (const [want, wantClass] of listed) {
    if (!(name === want || (name.startsWith(want) && paramSuffix(name.slice(want.length))))) continue;
    if (wantClass === null || classname === wantClass || (classname && classname.endsWith('.' + wantClass))) return true;
  }
  return false;
}

// node:test as the tests see it when some tests are not visible: the test
// files' top-level calls are recorded while they are imported, then
// replayed twice, the first time registering only the visible tests, the
// second only the others (a suite's body runs each time), so that every
// visible test has finished before another starts (docs/grading.md,
// "Hidden inputs").
function orderedNodeTest(real, visible) {
  let phase = 'collect';
  const recorded = [];
  const kinds = ['test', 'it', 'describe', 'suite'];
  // A test's name: its first argument, else its function's name
  // (test({ timeout }, function name() {})).
  const title = (args) => {
    if (typeof args[0] === 'string') return args[0];
    const f = args.find((a) => typeof a === 'function');
    return f ? f.name : '';
  };
  // A subtest (t.test) runs in its parent's phase, which may not be its
  // own: a visible subtest of a test that is not visible would be made
  // after hidden inputs reached the worker, a hidden one of a visible test
  // before the visible tests are done.  Such a subtest fails, saying why,
  // instead of running (docs/grading.md, "Hidden inputs").
  const guarded = (cb, inPhase) => {
    if (typeof cb !== 'function') return cb;
    return function (t, ...rest) {
      if (t && typeof t.test === 'function') {
        const sub = t.test.bind(t);
        t.test = (...sargs) => {
          const name = title(sargs);
          if (isListed(visible, name, 'test') !== (inPhase === 'visible')) {
            return sub(name, () => {
              throw new Error(`proctor_split: the ${inPhase === 'visible' ? 'hidden' : 'visible'} ` +
                `test '${name}' is a subtest of a ${inPhase} one; a split run keeps visible and ` +
                'hidden tests under different parents (docs/grading.md, "Hidden inputs")');
            });
          }
          return sub(...sargs.map((a) => (typeof a === 'function' ? guarded(a, inPhase) : a)));
        };
      }
      return cb.call(this, t, ...rest);
    };
  };
  const wrap = (kind, fn, isSuite) => {
    const w = function (...args) {
      if (phase === 'collect') {
        recorded.push([w, args]);
        return undefined;
      }
      if (!isSuite) {
        const shown = isListed(visible, title(args), 'test');
        if ((phase === 'visible') !== shown) return undefined;
        return fn(...args.map((a) => (typeof a === 'function' ? guarded(a, phase) : a)));
      }
      return fn(...args);
    };
    return w;
  };
  const wrapped = { ...real };
  for (const kind of kinds) {
    const base = real[kind];
    if (typeof base !== 'function') continue;
    const isSuite = kind === 'describe' || kind === 'suite';
    const w = wrap(kind, base, isSuite);
    for (const mod of ['skip', 'todo', 'only']) {
      if (typeof base[mod] === 'function') w[mod] = wrap(kind, base[mod], isSuite);
    }
    wrapped[kind] = w;
  }
  for (const hook of ['before', 'after', 'beforeEach', 'afterEach']) {
    const base = real[hook];
    if (typeof base !== 'function') continue;
    const w = function (...args) {
      if (phase === 'collect') { recorded.push([w, args, true]); return undefined; }
      return base(...args);
    };
    wrapped[hook] = w;
  }
  const def = typeof wrapped.test === 'function' ? wrapped.test : real.default;
  for (const k of Object.keys(wrapped)) if (def && k !== 'default' && def[k] === undefined) def[k] = wrapped[k];
  wrapped.default = def;
  wrapped.replay = () => {
    for (const p of ['visible', 'hidden']) {
      phase = p;
      for (const [w, args, isHook] of recorded) {
        if (isHook && p === 'hidden') continue;
        w(...args);
      }
    }
  };
  return wrapped;
}

// ---- the hooks (their own thread) ------------------------------------------------------------

let hookPort = null;
let hookSeq = 0;
const hookWaiting = new Map();
let hookReorder = false;
let hookBusy = null; // Int32Array on shared memory: the stand-ins the hooks wait for

export function initialize(data) {
  hookPort = data.port;
  hookBusy = new Int32Array(data.busy);
  hookReorder = Boolean(data.reorder);
  hookPort.on('message', (m) => {
    const w = hookWaiting.get(m.id);
    if (w) { hookWaiting.delete(m.id); w(m); }
  });
}

export async function resolve(specifier, context, next) {
  if (hookReorder && specifier === 'node:test' && context.parentURL &&
      context.parentURL !== import.meta.url && !context.parentURL.startsWith('node:')) {
    return { url: TEST_URL, shortCircuit: true };
  }
  const bare = isBare(specifier) ? specifier : null;
  let asWritten = null;
  if (!bare && context.parentURL && context.parentURL.startsWith('file:')) {
    try {
      const u = new URL(specifier, context.parentURL);
      if (u.protocol === 'file:') asWritten = fileURLToPath(u);
    } catch { asWritten = null; }
  }
  const r = await next(specifier, context);
  if (r.url.startsWith('file:')) {
    const file = fileURLToPath(r.url);
    if (file === SELF) return r;
    if (programWrote(file) || programSteered(asWritten, bare)) {
      // A package of the system's that a package directory of the
      // program's shadows wins, as a hidden module wins over the program's
      // file in Python's runtime.
      if (bare) {
        try {
          const t = await next(specifier, { ...context, parentURL: pathToFileURL('/proctor-split-root.mjs').href });
          if (t.url.startsWith('file:') && !programWrote(fileURLToPath(t.url))) return t;
        } catch { /* none of the system's: the program's own */ }
      }
      return { url: SCHEME + encodeURI(asWritten || file), shortCircuit: true };
    }
  }
  return r;
}

function standInSource(names, access) {
  const lines = [`const __m = ${access};`];
  let i = 0;
  for (const name of names) {
    if (typeof name !== 'string' || !name.isWellFormed()) continue;
    lines.push(`const __v${i} = __m[${JSON.stringify(name)}];`);
    lines.push(`export { __v${i} as ${JSON.stringify(name)} };`);
    i++;
  }
  return lines.join('\n') + '\n';
}

export async function load(url, context, next) {
  if (url === TEST_URL) {
    const real = await import('node:test');
    const names = Object.keys(real);
    return { format: 'module', shortCircuit: true, source: standInSource(names, `globalThis[Symbol.for('proctor.split')].nodeTest()`) };
  }
  if (url.startsWith(SCHEME)) {
    const file = decodeURI(url.slice(SCHEME.length));
    const id = ++hookSeq;
    Atomics.add(hookBusy, 0, 1);
    Atomics.notify(hookBusy, 0);
    const answer = await new Promise((res) => {
      hookWaiting.set(id, res);
      hookPort.postMessage({ id, file });
    });
    Atomics.sub(hookBusy, 0, 1);
    if (typeof answer.error === 'string') throw new Error(`the program's module ${file} failed to load: ${answer.error}`);
    const names = isArray(answer.names) ? answer.names : [];
    return {
      format: 'module',
      shortCircuit: true,
      source: standInSource(names, `globalThis[Symbol.for('proctor.split')].module(${JSON.stringify(file)}, 'import')`),
    };
  }
  return next(url, context);
}

// ---- the harness's main ------------------------------------------------------------------------

const DEFAULT_PATTERNS = [/\.test\.[cm]?js$/, /-test\.[cm]?js$/, /_test\.[cm]?js$/, /^test-.*\.[cm]?js$/, /^test\.[cm]?js$/];

// node --test's default files when none is named: below the working
// directory, node_modules left out, files the program wrote never.
function discover(dir, depth = 0, underTest = false, out = []) {
  if (depth > 20 || out.length > 1000) return out;
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return out; }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      discover(p, depth + 1, underTest || e.name === 'test', out);
    } else if (e.isFile() && (DEFAULT_PATTERNS.some((re) => re.test(e.name)) || (underTest && /\.[cm]?js$/.test(e.name)))) {
      if (!programWrote(p)) out.push(p);
    }
  }
  return out;
}

async function harnessMain(files) {
  const visible = visibleTests();
  const { register, default: Module } = await import('node:module');
  const { MessageChannel } = await import('node:worker_threads');
  const { port1, port2 } = new MessageChannel();
  const realTest = await import('node:test');
  let nodeTest = null;
  const api = {
    module: (file, how) => getSession().module(file, how),
    nodeTest: () => {
      if (!nodeTest) nodeTest = visible ? orderedNodeTest(realTest, visible) : { ...realTest };
      return nodeTest;
    },
  };
  Object.defineProperty(globalThis, KEY, { value: api });
  // A module of the program's that fails to load (its code threw) fails
  // the import of the test file, with the submission's error: a stand-in
  // without names would fail it too, but with a link error that hides it.
  port1.on('message', ({ id, file }) => {
    let names = [];
    let error = null;
    try {
      names = Object.keys(getSession().module(file, 'import'));
    } catch (e) {
      names = [];
      error = describeError(e);
    }
    port1.postMessage({ id, names, error });
  });
  // The main thread's wait for a module does not keep its event loop
  // alive: while the hooks wait for a stand-in's names, something must.
  const busy = new SharedArrayBuffer(4);
  const waiting = new Int32Array(busy);
  process.on('beforeExit', () => {
    if (Atomics.load(waiting, 0) === 0) Atomics.wait(waiting, 0, 0, 20);
    if (Atomics.load(waiting, 0) > 0) setTimeout(() => {}, 1);
  });
  register(import.meta.url, { data: { port: port2, busy, reorder: visible !== null }, transferList: [port2] });

  // require() of a file the program wrote: the worker's module.exports.
  // $HOME is /work: its .node_modules and .node_libraries are the program's.
  Module.globalPaths = Module.globalPaths.filter((p) => p !== WORK && !p.startsWith(WORK + '/'));
  const load = Module._load;
  Module._load = function (request, parent, isMain) {
    // require('node:test') is the test function, with the rest as its
    // properties (`const test = require('node:test')` and `{ test }` both).
    if (request === 'node:test' && visible) return api.nodeTest().default;
    let file = null;
    try { file = Module._resolveFilename(request, parent, isMain); } catch { file = null; }
    if (!file || !path.isAbsolute(file) || file === SELF) return load.apply(this, arguments);
    const bare = isBare(request) ? request : null;
    const asWritten = bare ? null : path.resolve(parent && parent.filename ? path.dirname(parent.filename) : process.cwd(), request);
    if (!programWrote(file) && !programSteered(asWritten, bare)) return load.apply(this, arguments);
    // The program's file, or one it steered to: a candidate of the tests'
    // or the system's that node would also have found wins (require's
    // probing tries `helpers` before `helpers.js`; a node_modules of the
    // program's before the system's packages).
    const trusted = (f) => {
      try { return fs.statSync(f).isFile() && !programWrote(f) && !programSteered(f, null); } catch { return false; }
    };
    if (bare) {
      try {
        const t = Module._resolveFilename(request, { id: '<proctor>', filename: '/proctor-split-root.js', paths: Module._nodeModulePaths('/') });
        if (trusted(t)) return load.call(this, t, parent, isMain);
      } catch { /* none of the system's */ }
    } else {
      for (const f of [...Object.keys(Module._extensions).map((x) => asWritten + x),
        ...Object.keys(Module._extensions).map((x) => path.join(asWritten, 'index' + x))]) {
        if (trusted(f)) return load.call(this, f, parent, isMain);
      }
    }
    return getSession().module(asWritten || file, 'require');
  };

  process.on('exit', (code) => {
    if (code === ABORT_STATUS || code === NOT_STARTED_STATUS) process.exitCode = 1;
  });
  // A test file that fails to import is a failing test named after it,
  // and the other files still run, as under node --test (where each file
  // is a process of its own): a submission whose module throws when it
  // loads is graded, its error shown, not ended as a crash.
  const list = files.length ? files : discover(process.cwd());
  try {
    for (const f of list) {
      const abs = path.resolve(f);
      if (programWrote(abs)) abort(`the test file ${f} is the program's`, 1);
      try {
        await import(pathToFileURL(abs).href);
      } catch (e) {
        const why = describeError(e);
        process.stderr.write(`${abs}: ${why}\n`);
        api.nodeTest().test(abs, () => { throw new Error(why); });
      }
    }
  } finally {
    port1.unref();
  }
  if (nodeTest && nodeTest.replay) nodeTest.replay();
}

if (isMainThread && process.argv[1] === SELF) {
  const role = process.argv[2];
  if (role === 'program') {
    workerMain();
  } else if (role === 'harness') {
    harnessMain(process.argv.slice(3)).catch((e) => {
      process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
      process.exitCode = 1;
    });
  } else {
    process.stderr.write('usage: node proctor_split.mjs harness TESTFILE... | program\n');
    process.exitCode = 2;
  }
}
