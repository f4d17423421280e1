// Sandboxes on a Proctor server: create, exec, files, leases, templates.
//
// An ES module on the platform's `fetch`, with no dependencies. The routes
// are those of docs/api.md, "Sandboxes"; every error the server answers
// rejects with a ProctorError carrying its stable code. The Python client
// (clients/python) is the reference: same verbs, same defaults, same retries.
// Only files.upload() and files.download() need Node (node:fs, node:zlib, in
// ./tar.js), and import it when called, so the rest also runs wherever fetch
// does.

const DEFAULT_TIMEOUT_MS = 60_000;
// An exec's request waits this much longer than the command's own limit:
// the server answers when the command ended, and never holds it past that.
const EXEC_SLACK_MS = 60_000;
// An upload or a download moves a whole tree, which the sandbox's host packs
// or unpacks before it answers: longer than any JSON call.
const TRANSFER_TIMEOUT_MS = 300_000;
// A streamed exec has no whole-request timeout (the command's own limit
// ends it on the server); the request fails when no byte came for this many
// keepalive intervals, or STREAM_IDLE_MIN_MS, whichever is longer.
const STREAM_IDLE_KEEPALIVES = 3;
const STREAM_IDLE_MIN_MS = 30_000;
const DEFAULT_KEEPALIVE_MS = 15_000;
// One line of a streamed answer, at most: the server sends 48 KiB of
// output a line (64 KiB of base64), and its result at most 1 MiB of each
// stream (as JSON, up to six times that escaped).
const STREAM_LINE_MAX = 16 << 20;

// Node (18.18+, 20.4+) defines Symbol.asyncDispose as this registered
// symbol; where the runtime has none, the method is still callable by it.
const asyncDispose = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");

// ---- errors ----

/** An answer of the server that is not a success (or no answer at all). */
export class ProctorError extends Error {
  /**
   * @param {number} status the HTTP status (0 when no answer came)
   * @param {string} code the stable error code of docs/api.md
   * @param {string} message the server's words (for people; may change)
   * @param {number|null} [retryAfter] seconds, from Retry-After
   * @param {unknown} [cause]
   */
  constructor(status, code, message, retryAfter = null, cause = undefined) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** No such sandbox or file in the token's course (or it ended). */
export class NotFound extends ProctorError {}
/** The request was refused as it is: a member, a path, a query. */
export class InvalidInput extends ProctorError {}
/** No token, or not a valid one. */
export class Unauthorized extends ProctorError {}
/** The token's scope is too small. */
export class Forbidden extends ProctorError {}
/** No room for a sandbox now (the host's slots, or the token's
 * max_live_sandboxes), also after waitForCapacityMs; `retryAfter` says when
 * to try again. */
export class Capacity extends ProctorError {}
/** The course's daily CPU cap, or the token's daily_spend_micros, is spent. */
export class BudgetExceeded extends ProctorError {}
/** The server cannot do it now (its store, or the sandbox's host). */
export class Unavailable extends ProctorError {}
/** No answer came from the server (refused, reset, or timed out). */
export class ConnectionFailed extends ProctorError {}

// The server's stable codes (docs/api.md, "Errors"); any other code is a
// plain ProctorError that still carries it.
const BY_CODE = {
  not_found: NotFound,
  invalid_input: InvalidInput,
  invalid_request: InvalidInput,
  too_large: InvalidInput,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  capacity: Capacity,
  budget_exceeded: BudgetExceeded,
  unavailable: Unavailable,
};

// The status each code has in docs/api.md, "Errors": an error line of a
// streamed answer (which came with 200) carries it, as the same error
// answered before the stream would.
const STATUS_OF_CODE = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  budget_exceeded: 403,
  not_found: 404,
  too_large: 413,
  invalid_input: 422,
  capacity: 429,
  internal: 500,
  unavailable: 503,
};

function errorOfCode(code, message) {
  code = typeof code === "string" && code ? code : "unknown";
  const Cls = Object.hasOwn(BY_CODE, code) ? BY_CODE[code] : ProctorError;
  return new Cls(STATUS_OF_CODE[code] ?? 0, code, typeof message === "string" ? message : "");
}

function retryAfterOf(header) {
  if (header == null || header === "") return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds;
  const when = Date.parse(header); // the HTTP-date form
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

async function errorOf(res) {
  let code = "unknown";
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const doc = JSON.parse(await res.text());
    if (typeof doc?.error?.code === "string") code = doc.error.code;
    if (typeof doc?.error?.message === "string") message = doc.error.message;
  } catch {
    // Not our JSON (a proxy's page, a cut body): the status says enough.
  }
  const Cls = Object.hasOwn(BY_CODE, code) ? BY_CODE[code] : ProctorError;
  return new Cls(res.status, code, message, retryAfterOf(res.headers.get("retry-after")));
}

// ---- bytes ----

const utf8 = new TextEncoder();

function bytesOf(data, what) {
  if (typeof data === "string") return utf8.encode(data);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`${what} must be a string or bytes (Uint8Array), not ${typeof data}`);
}

function toBase64(bytes) {
  if (globalThis.Buffer) {
    return globalThis.Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  }
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text) {
  if (!text) return new Uint8Array(0);
  if (globalThis.Buffer) {
    // A copy: a small Buffer is a view of Node's shared pool.
    return new Uint8Array(globalThis.Buffer.from(text, "base64"));
  }
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// ---- options ----

// A misspelt option would otherwise be ignored without a word.
function checkOptions(opts, allowed, where) {
  if (opts == null) return {};
  if (typeof opts !== "object") throw new TypeError(`${where}: options must be an object`);
  for (const key of Object.keys(opts)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${where}: unknown option '${key}' (known: ${allowed.join(", ")})`);
    }
  }
  return opts;
}

const CONNECTION = ["server", "token"];

function envOf(name) {
  return globalThis.process?.env?.[name] || undefined;
}

function stringMap(map, what) {
  const out = {};
  for (const [k, v] of Object.entries(map)) {
    if (typeof v !== "string") throw new TypeError(`${what}.${k} must be a string`);
    out[k] = v;
  }
  return out;
}

// ---- the HTTP client ----

class Client {
  constructor(server, token) {
    server = server || envOf("PROCTOR_SERVER");
    token = token || envOf("PROCTOR_TOKEN");
    if (!server) throw new TypeError("no server: pass { server } or set PROCTOR_SERVER");
    if (!token) throw new TypeError("no token: pass { token } or set PROCTOR_TOKEN");
    this.server = String(server).replace(/\/+$/, "");
    this.token = String(token);
  }

  /**
   * One request: a JSON `body` (or `raw` bytes of `rawType`); the JSON
   * answer (or, with `wantBytes`, its bytes as a Uint8Array).
   */
  async call(
    method,
    path,
    { body, raw, rawType, wantBytes = false, query, timeoutMs = DEFAULT_TIMEOUT_MS, idempotencyKey } = {},
  ) {
    let url = this.server + path;
    if (query) url += "?" + new URLSearchParams(query).toString();
    const headers = {
      Authorization: `Bearer ${this.token}`,
      Accept: wantBytes ? "application/gzip, application/json" : "application/json",
    };
    if (raw !== undefined) headers["Content-Type"] = rawType;
    else if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
    let res;
    let text;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw await errorOf(res);
      if (wantBytes) return new Uint8Array(await res.arrayBuffer());
      text = await res.text();
    } catch (err) {
      if (err instanceof ProctorError) throw err;
      const why =
        err?.name === "TimeoutError"
          ? `no answer within ${timeoutMs} ms`
          : err?.cause?.message || err?.message || String(err);
      throw new ConnectionFailed(0, "connection_failed", `${method} ${url}: ${why}`, null, err);
    }
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new ProctorError(res.status, "unknown", `${method} ${url}: the answer is not JSON`);
    }
  }

  /**
   * One request whose answer is JSON lines (application/x-ndjson), read as
   * they come: `onLine(doc)` for each, until it returns something other than
   * undefined, which is the answer. The request fails with ConnectionFailed
   * when no byte came for `idleMs` (the server's keepalives keep a quiet
   * answer going), or when the answer ends before `onLine` had its answer.
   * A refusal before the stream starts is an ordinary ProctorError. What
   * `onLine` throws (a callback's own error) rejects as it is.
   */
  async stream(method, path, { body, idleMs, onLine }) {
    const url = this.server + path;
    const controller = new AbortController();
    let timer = null;
    let idle = false;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        idle = true;
        controller.abort();
      }, idleMs);
    };
    const pause = () => clearTimeout(timer);
    let reader = null;
    let finished = false;
    try {
      arm();
      const res = await fetch(url, {
        method,
        headers: {
          Authorization: `Bearer ${this.token}`,
          Accept: "application/x-ndjson, application/json",
          "Content-Type": "application/json",
        },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!res.ok) {
        finished = true; // errorOf reads the (small) body to its end
        throw await errorOf(res);
      }
      const type = res.headers.get("content-type") ?? "";
      if (!/^application\/x-ndjson\b/i.test(type) || !res.body) {
        throw new ProctorError(
          res.status,
          "bad_stream",
          `${method} ${url}: the answer is not a stream of JSON lines (${type || "no body"})`,
        );
      }
      reader = res.body.getReader();
      // JSON is UTF-8; "\n" is never part of a multi-byte character, so the
      // text decoded across reads splits into lines where the bytes do.
      const text = new TextDecoder();
      let pending = "";
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (done) {
          finished = true;
          pending += text.decode();
          if (pending.trim()) {
            throw new ConnectionFailed(
              0,
              "connection_failed",
              `${method} ${url}: the stream ended in the middle of a line`,
            );
          }
          throw new ConnectionFailed(0, "connection_failed", `${method} ${url}: the stream ended with no result`);
        }
        pending += text.decode(value, { stream: true });
        let start = 0;
        for (let nl; (nl = pending.indexOf("\n", start)) >= 0; start = nl + 1) {
          const line = pending.slice(start, nl);
          if (!line.trim()) continue;
          let doc;
          try {
            doc = JSON.parse(line);
          } catch {
            throw new ProctorError(res.status, "bad_stream", `${method} ${url}: a line of the stream is not JSON`);
          }
          pause(); // a slow callback is not a quiet server
          let answer;
          try {
            answer = await onLine(doc);
          } catch (err) {
            throw new CallbackFailed(err);
          }
          if (answer !== undefined) return answer;
          arm();
        }
        pending = pending.slice(start);
        if (pending.length > STREAM_LINE_MAX) {
          throw new ProctorError(
            res.status,
            "bad_stream",
            `${method} ${url}: a line of the stream is past ${STREAM_LINE_MAX} characters`,
          );
        }
      }
    } catch (err) {
      if (err instanceof CallbackFailed) throw err.err;
      if (err instanceof ProctorError) throw err;
      const why = idle ? `no byte of the answer for ${idleMs} ms` : err?.cause?.message || err?.message || String(err);
      throw new ConnectionFailed(0, "connection_failed", `${method} ${url}: ${why}`, null, err);
    } finally {
      clearTimeout(timer);
      // Leaving before the end (a result, an error line, a callback that
      // threw): the connection goes; the command runs on, on record.
      if (reader && !finished) reader.cancel().catch(() => {});
    }
  }
}

// A callback's own failure, carried through the stream's reading so that
// it rejects as it is, never as a ConnectionFailed.
class CallbackFailed {
  constructor(err) {
    this.err = err;
  }
}

async function uuid() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  return (await import("node:crypto")).randomUUID(); // Node 18 without the global
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- results ----

function usageOf(u) {
  u = u || {};
  return {
    cpuMs: u.cpu_ms ?? 0,
    wallMs: u.wall_ms ?? 0,
    peakMemoryKiB: u.peak_memory_kib ?? 0,
    peakPids: u.peak_pids ?? 0,
  };
}

/** One command's verdict (docs/run-result.md) and its output. */
function execResultOf(d) {
  return {
    exitCode: d.exit_code ?? null,
    signal: d.signal ?? null,
    timedOut: Boolean(d.timed_out),
    status: d.status ?? "",
    limit: d.limit ?? null,
    stdout: d.stdout ?? "",
    stderr: d.stderr ?? "",
    stdoutTruncated: Boolean(d.stdout_truncated),
    stderrTruncated: Boolean(d.stderr_truncated),
    stdoutBytes: Number(d.stdout_bytes ?? 0),
    stderrBytes: Number(d.stderr_bytes ?? 0),
    usage: usageOf(d.usage),
    execId: Number(d.exec_id ?? 0),
    limitsHit: Array.isArray(d.limits_hit) ? [...d.limits_hit] : [],
    message: d.message ?? null,
    leaseEnded: Boolean(d.lease_ended),
    raw: d,
  };
}

// ---- files ----

/**
 * A sandbox's files: any absolute path outside the system directories
 * (/usr, /etc, /bin, /sbin, /lib*, /proc, /dev, /sys, /var, /run), e.g.
 * /work, /tmp, /workspace/submission, /grader; a relative path is below
 * /work.
 */
class Files {
  #call;

  /** @param {(method: string, rest: string, opts?: object) => Promise<any>} call */
  constructor(call) {
    this.#call = call;
  }

  /** Write a file (its parents are made); resolves to its size. */
  async write(path, data, options) {
    const { executable = false } = checkOptions(options, ["executable"], "files.write");
    const bytes = bytesOf(data, "data");
    const body = { path, executable: Boolean(executable) };
    if (bytes.length) body.content_base64 = toBase64(bytes);
    else body.content = "";
    const r = await this.#call("PUT", "/files", { body });
    return Number(r.size);
  }

  /** A file's bytes. */
  async read(path) {
    const r = await this.#call("GET", "/files", { query: { path } });
    return fromBase64(r?.content_base64);
  }

  /** A file's text (UTF-8 unless told). */
  async readText(path, encoding = "utf-8") {
    return new TextDecoder(encoding).decode(await this.read(path));
  }

  /** A directory's entries. */
  async list(dir = "/work") {
    const r = await this.#call("GET", "/list", { query: { path: dir } });
    const entries = (r?.entries ?? []).map(entryOf);
    // A listing the server cut (10,000 entries) says so: never silently short.
    entries.truncated = Boolean(r?.truncated);
    return entries;
  }

  /**
   * What is at `path` (a link is described, never followed), or null when
   * nothing is there.
   */
  async stat(path) {
    const r = await this.#call("GET", "/stat", { query: { path } });
    if (!r?.exists) return null;
    return entryOf({ ...r, name: String(path).replace(/\/+$/, "").split("/").pop() });
  }

  /** Whether anything (a file, a directory, a link) is at `path`. */
  async exists(path) {
    return (await this.stat(path)) !== null;
  }

  /**
   * Remove a file, a link (not its target) or an empty directory; with
   * `recursive` a whole tree. Nothing there rejects with NotFound.
   */
  async remove(path, options) {
    const { recursive = false } = checkOptions(options, ["recursive"], "files.remove");
    await this.#call("DELETE", "/files", { query: { path, recursive: recursive ? "true" : "false" } });
  }

  /** Make a directory and its parents (one already there is fine). */
  async makeDir(path) {
    await this.#call("POST", "/dirs", { body: { path } });
  }

  /**
   * Copy the tree localDir to remoteDir (made with its parents) as one tar
   * stream; resolves to how many files went. Regular files and directories
   * only (execute bits kept); a symlink or a special file in localDir
   * rejects, naming it, before anything is sent. Files already in
   * remoteDir stay unless the tree has one of the same name. Node only.
   */
  async upload(localDir, remoteDir) {
    const { packTree } = await import("./tar.js");
    const { gz } = await packTree(localDir);
    const r = await this.#call("PUT", "/archive", {
      query: { path: String(remoteDir) },
      raw: gz,
      rawType: "application/gzip",
      timeoutMs: TRANSFER_TIMEOUT_MS,
    });
    return Number(r.files);
  }

  /**
   * Copy the tree remoteDir into localDir (made if missing) as one tar
   * stream; resolves to how many files came. Links and special files in the
   * sandbox are left out by the server; every name is checked again here
   * (relative, no "..", a file or a directory), else the download rejects
   * with a ProctorError of code "bad_archive". Node only.
   */
  async download(remoteDir, localDir) {
    const { unpackInto, BadArchive } = await import("./tar.js");
    const data = await this.#call("GET", "/archive", {
      query: { path: String(remoteDir) },
      wantBytes: true,
      timeoutMs: TRANSFER_TIMEOUT_MS,
    });
    try {
      return await unpackInto(data, localDir);
    } catch (err) {
      if (!(err instanceof BadArchive)) throw err;
      throw new ProctorError(0, "bad_archive", `download ${remoteDir}: ${err.message}`, null, err);
    }
  }
}

function entryOf(e) {
  return {
    name: e.name,
    type: e.type,
    size: Number(e.size),
    mode: Number(e.mode),
    mtimeMs: Number(e.mtime_ms),
  };
}

// ---- templates ----

function templateId(id) {
  const s = String(typeof id === "object" && id !== null ? id.id : id);
  if (!/^[0-9]{1,15}$/.test(s)) throw new TypeError(`not a template id: ${s}`);
  return Number(s);
}

/**
 * The course's sandbox templates, made by `sbx.snapshot(name)`: each a
 * document { id, name, version, template ("name@N"), digest, bytes,
 * source_sandbox_id, created_ms }.
 */
export class Templates {
  /** @private Only static methods. */
  constructor() {
    throw new TypeError("Templates has only static methods");
  }

  /** Every template not removed, newest first (at most 1000). */
  static async list(options = {}) {
    const o = checkOptions(options, CONNECTION, "Templates.list");
    return (await new Client(o.server, o.token).call("GET", "/v1/templates")).templates;
  }

  /** One template, by its id (or its document); a removed one is NotFound. */
  static async get(id, options = {}) {
    const o = checkOptions(options, CONNECTION, "Templates.get");
    return new Client(o.server, o.token).call("GET", `/v1/templates/${templateId(id)}`);
  }

  /**
   * Remove a template, by its id (or its document): sandboxes made from it
   * keep their files, and its version number is never given again.
   * Resolves to its document, with `removed: true`; NotFound when it is
   * not there (or removed already).
   */
  static async remove(id, options = {}) {
    const o = checkOptions(options, CONNECTION, "Templates.remove");
    return new Client(o.server, o.token).call("DELETE", `/v1/templates/${templateId(id)}`);
  }
}

// ---- sandboxes ----

const CREATE_OPTIONS = [
  "image",
  "vcpu",
  "memoryMiB",
  "diskMiB",
  "network",
  "timeoutSeconds",
  "labels",
  "env",
  "isolation",
  "idleTimeoutSeconds",
  "retries",
  "waitForCapacityMs",
  "maxCostMicros",
  "template",
  ...CONNECTION,
];

const EXEC_OPTIONS = [
  "cwd",
  "env",
  "stdin",
  "timeoutMs",
  "pids",
  "maxOutputBytes",
  "onStdout",
  "onStderr",
  "keepaliveMs",
];

function sandboxId(id) {
  const s = String(id);
  if (!/^[0-9]{1,15}$/.test(s)) throw new TypeError(`not a sandbox id: ${s}`);
  return Number(s);
}

/**
 * A throwaway sandbox on the server, alive until killed or its lease ends.
 *
 * `await using sbx = await Sandbox.create(...)` kills it on leaving the
 * block where the runtime has `await using`; elsewhere call kill() (or its
 * alias close()) in a `finally`. Nothing outlives its lease either way.
 */
export class Sandbox {
  #client;
  #info;

  /** @private Use Sandbox.create() or Sandbox.connect(). */
  constructor(client, info) {
    if (!(client instanceof Client)) {
      throw new TypeError("use Sandbox.create() or Sandbox.connect()");
    }
    this.#client = client;
    this.#info = info;
    this.id = Number(info.id);
    this.files = new Files((method, rest, opts) => this.#call(method, rest, opts));
  }

  /**
   * Create a sandbox. Retried only when no answer came, with the same
   * Idempotency-Key, so a retry never makes a second sandbox.
   */
  static async create(options = {}) {
    const o = checkOptions(options, CREATE_OPTIONS, "Sandbox.create");
    const client = new Client(o.server, o.token);
    const body = {};
    // Only what was given: the server's documented defaults hold otherwise.
    if (o.image) body.image = o.image;
    if (o.isolation !== undefined) body.isolation = o.isolation;
    if (o.vcpu !== undefined) body.vcpu = o.vcpu;
    if (o.memoryMiB !== undefined) body.memory_mib = o.memoryMiB;
    if (o.diskMiB !== undefined) body.disk_mib = o.diskMiB;
    if (o.network !== undefined) body.network = o.network;
    if (o.timeoutSeconds !== undefined) body.timeout_seconds = o.timeoutSeconds;
    if (o.idleTimeoutSeconds !== undefined) body.idle_timeout_seconds = o.idleTimeoutSeconds;
    if (o.labels) body.labels = stringMap(o.labels, "labels");
    if (o.env) body.env = stringMap(o.env, "env");
    if (o.waitForCapacityMs !== undefined) body.wait_for_capacity_ms = o.waitForCapacityMs;
    if (o.maxCostMicros !== undefined) body.max_cost_micros = o.maxCostMicros;
    if (o.template !== undefined) body.template = o.template;
    // The answer may take the whole wait (and a template's files put in
    // place): the HTTP timeout outlasts it.
    const timeoutMs =
      (o.template !== undefined ? TRANSFER_TIMEOUT_MS : DEFAULT_TIMEOUT_MS) + (Number(o.waitForCapacityMs) || 0);
    const retries = o.retries ?? 3;
    const idempotencyKey = await uuid();
    for (let attempt = 0; ; attempt++) {
      try {
        return new Sandbox(client, await client.call("POST", "/v1/sandboxes", { body, idempotencyKey, timeoutMs }));
      } catch (err) {
        if (!(err instanceof ConnectionFailed) || attempt >= retries) throw err;
        await sleep(200 * (attempt + 1));
      }
    }
  }

  /** A sandbox made elsewhere (another process), by its id. */
  static async connect(id, options = {}) {
    const o = checkOptions(options, CONNECTION, "Sandbox.connect");
    const client = new Client(o.server, o.token);
    return new Sandbox(client, await client.call("GET", `/v1/sandboxes/${sandboxId(id)}`));
  }

  /** The course's sandboxes (newest first), by one label if given. */
  static async list(filter = {}, options = {}) {
    const f = checkOptions(filter, ["labels", "live"], "Sandbox.list");
    const o = checkOptions(options, CONNECTION, "Sandbox.list");
    const client = new Client(o.server, o.token);
    const query = { live: f.live === false ? "0" : "1" };
    if (f.labels) {
      const pairs = Object.entries(f.labels);
      if (pairs.length > 1) throw new RangeError("Sandbox.list: by one label at most");
      if (pairs.length === 1) query.label = `${pairs[0][0]}:${pairs[0][1]}`;
    }
    return (await client.call("GET", "/v1/sandboxes", { query })).sandboxes;
  }

  /** The sandbox's document as last answered (by create, connect, getInfo or kill). */
  get info() {
    return this.#info;
  }

  /** State, labels, lease end, usage so far (the API's document), asked now. */
  async getInfo() {
    this.#info = await this.#call("GET", "");
    return this.#info;
  }

  /** The metered cost so far (info.usage.cost_micros), in millionths of a
   * dollar, asked now. */
  async costMicros() {
    return Number((await this.getInfo()).usage.cost_micros);
  }

  /**
   * End the lease `seconds` from now (1 to 86400), sooner or later than it
   * was; with `idleTimeoutSeconds` set the idle timeout too (0: none).
   * Resolves to the sandbox's document; an ended sandbox is NotFound.
   */
  async setTimeout(seconds, options) {
    const o = checkOptions(options, ["idleTimeoutSeconds"], "setTimeout");
    const body = { timeout_seconds: seconds };
    if (o.idleTimeoutSeconds !== undefined) body.idle_timeout_seconds = o.idleTimeoutSeconds;
    this.#info = await this.#call("POST", "/timeout", { body });
    return this.#info;
  }

  /**
   * Keep this sandbox's files (/work, /tmp and its own top-level
   * directories: regular files and directories, execute bits kept; links
   * and special files left out) as the template `name@N`, N the name's
   * next version (a removed version is never given again).
   * `Sandbox.create({ template: "name@N" })` (or `"name"`, the latest)
   * starts from it. Resolves to the template's document.
   */
  async snapshot(name) {
    return this.#call("POST", "/snapshot", { body: { name }, timeoutMs: TRANSFER_TIMEOUT_MS });
  }

  /** Every command run in the sandbox, oldest first: argv, verdict, usage
   * (not the output), as the API's documents. */
  async execs() {
    const out = [];
    for (let after = 0; ; ) {
      const r = await this.#call("GET", "/execs", { query: { after: String(after) } });
      out.push(...r.execs);
      if (r.next_after == null) return out;
      after = r.next_after;
    }
  }

  /** Destroy the sandbox now (a sandbox already ended is left as it is). */
  async kill() {
    this.#info = await this.#call("DELETE", "");
  }

  /** The same as kill(). */
  async close() {
    await this.kill();
  }

  /** `await using`: kill on leaving the block; a server's refusal is not thrown. */
  async [asyncDispose]() {
    try {
      await this.kill();
    } catch (err) {
      if (!(err instanceof ProctorError)) throw err;
    }
  }

  /**
   * Run one command and wait for its verdict.
   *
   * `cmd` is an argv array (what grading loops should use: a file name a
   * student chose cannot inject shell syntax) or one string run as
   * `sh -c`. A command past `timeoutMs` is killed with everything it
   * started, and the result says `timedOut`. Anything else as `cmd` is
   * sent as it is, for the server to refuse with InvalidInput.
   *
   * With `onStdout` / `onStderr` the output also goes to them as it is
   * produced: text, decoded as UTF-8 across pieces (a character split
   * between two writes arrives whole), up to `maxOutputBytes` of each
   * stream; a callback that returns a promise is awaited before the next
   * piece. The server sends a keepalive after `keepaliveMs` of quiet
   * (default 15,000; 100 to 60,000), so a proxy that cuts quiet
   * connections keeps a quiet command's; `keepaliveMs` alone streams too,
   * with no callbacks, for that. The request fails (ConnectionFailed) only
   * after three keepalive intervals (at least 30 s) with no byte, never for
   * the command's length. The result is the same either way; the sandbox
   * ending while the command runs rejects with NotFound ("... was deleted
   * while the command ran"). A callback that throws rejects the exec with
   * its error and leaves the stream: the command runs on, on record.
   */
  async exec(cmd, options) {
    const o = checkOptions(options, EXEC_OPTIONS, "exec");
    const timeoutMs = o.timeoutMs ?? 60_000;
    const body = { timeout_ms: timeoutMs };
    if (typeof cmd === "string") body.command = cmd;
    else if (Array.isArray(cmd)) body.argv = [...cmd];
    else body.argv = cmd ?? null;
    if (o.cwd != null) body.cwd = o.cwd;
    if (o.env) body.env = stringMap(o.env, "env");
    if (o.stdin != null) {
      const bytes = bytesOf(o.stdin, "stdin");
      if (bytes.length) body.stdin_base64 = toBase64(bytes); // empty input is no input
    }
    if (o.pids != null) body.pids = o.pids;
    if (o.maxOutputBytes != null) body.max_output_bytes = o.maxOutputBytes;
    const sinks = { stdout: o.onStdout, stderr: o.onStderr };
    for (const [k, f] of Object.entries(sinks)) {
      if (f != null && typeof f !== "function") {
        throw new TypeError(`exec: ${k === "stdout" ? "onStdout" : "onStderr"} must be a function`);
      }
    }
    if (sinks.stdout == null && sinks.stderr == null && o.keepaliveMs == null) {
      const timeout = (Number.isFinite(timeoutMs) ? timeoutMs : DEFAULT_TIMEOUT_MS) + EXEC_SLACK_MS;
      return execResultOf(await this.#call("POST", "/exec", { body, timeoutMs: timeout }));
    }
    body.stream = true;
    if (o.keepaliveMs != null) body.keepalive_ms = o.keepaliveMs;
    const keepalive = Number.isFinite(o.keepaliveMs) && o.keepaliveMs > 0 ? o.keepaliveMs : DEFAULT_KEEPALIVE_MS;
    // One decoder a stream: a character split across two lines reaches the
    // callback whole (undecodable bytes become U+FFFD, as in the result).
    const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const give = async (k, text) => {
      if (text && sinks[k]) await sinks[k](text);
    };
    return this.#client.stream("POST", `/v1/sandboxes/${this.id}/exec`, {
      body,
      idleMs: Math.max(STREAM_IDLE_MIN_MS, STREAM_IDLE_KEEPALIVES * keepalive),
      onLine: async (line) => {
        switch (line?.type) {
          case "stdout":
          case "stderr":
            await give(line.type, decoders[line.type].decode(fromBase64(line.data_base64), { stream: true }));
            return undefined;
          case "result":
            for (const k of ["stdout", "stderr"]) await give(k, decoders[k].decode());
            return execResultOf(line.result ?? {});
          case "error":
            throw errorOfCode(line.error?.code, line.error?.message);
          default:
            return undefined; // "started", "keepalive", and lines still to come
        }
      },
    });
  }

  #call(method, rest, opts) {
    return this.#client.call(method, `/v1/sandboxes/${this.id}${rest}`, opts);
  }
}
