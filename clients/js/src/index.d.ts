// TypeScript declarations for proctor-client (src/index.js).

// Symbol.asyncDispose for a `lib` older than esnext.disposable (TypeScript
// < 5.2 or an es2022 target), as @types/node declares it; `await using`
// itself needs TypeScript 5.2.
declare global {
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/** Where the server is and who asks; each falls back to PROCTOR_SERVER / PROCTOR_TOKEN. */
export interface ConnectionOptions {
  /** The server's URL, e.g. "http://127.0.0.1:8080". */
  server?: string;
  /** An instructor token ("prt_..."). */
  token?: string;
}

export interface CreateOptions extends ConnectionOptions {
  /** An image pin "name@N", or the host's system (the server's default, "host"). */
  image?: string;
  /** 1 to 16 (default 1): each command's CPU time may be this many times its wall time. */
  vcpu?: number;
  /** 16 to 65536 (default 512): every command's memory limit. */
  memoryMiB?: number;
  /** 1 to 65536 (default 256): the writable tree (/work, /tmp and any other directory made outside the system's). */
  diskMiB?: number;
  /** The only value: no network (a loopback inside works). */
  network?: "none";
  /** 1 to 86400 (default 300): the lease; the sandbox is destroyed when it ends. */
  timeoutSeconds?: number;
  /** At most 32 string members. */
  labels?: Record<string, string>;
  /** Added to every command's environment; at most 32 members. */
  env?: Record<string, string>;
  /** "jail" (default) or "auto"; "vm" is refused (Unavailable) for now. */
  isolation?: "jail" | "vm" | "auto";
  /**
   * 0 to 86400 (default 0: none): the sandbox ends ("expired", its
   * end_reason mentioning idle) after this many seconds with no request
   * and no command running.
   */
  idleTimeoutSeconds?: number;
  /** Retries when no answer came (default 3); never a second sandbox (Idempotency-Key). */
  retries?: number;
  /**
   * 0 to 600000: when the host or the token has no room, wait in line this
   * long for it (first come first served in a course, courses in turn)
   * before rejecting with Capacity; without it Capacity comes at once.
   */
  waitForCapacityMs?: number;
  /**
   * The sandbox is destroyed when its metered cost (info.usage.cost_micros)
   * reaches this many millionths of a dollar; its end_reason says so.
   */
  maxCostMicros?: number;
  /**
   * A template of the course, "name@N" or "name" (its latest version): the
   * sandbox starts with its files (made by sbx.snapshot()). An unknown or
   * removed one is NotFound, a malformed one InvalidInput.
   */
  template?: string;
}

export interface ListFilter {
  /** One label at most: { student: "ada" }. */
  labels?: Record<string, string>;
  /** Only running sandboxes (default true). */
  live?: boolean;
}

export interface ExecOptions {
  /** The directory it starts in (default /work). */
  cwd?: string;
  /** Added to the sandbox's environment for this command. */
  env?: Record<string, string>;
  /** Its input (a string is sent as UTF-8); default none. */
  stdin?: string | Uint8Array;
  /** Its wall-clock limit, 1 to 3,600,000 (default 60,000; never past the lease). */
  timeoutMs?: number;
  /** Processes at once, 1 to 4096 (default 256). */
  pids?: number;
  /** Stdout and stderr kept, each, 0 to 1 MiB (default 1 MiB; the rest is counted). */
  maxOutputBytes?: number;
  /**
   * Given (or onStderr), the command's stdout as it is produced: text,
   * decoded as UTF-8 across pieces (a character split between two writes
   * arrives whole), up to maxOutputBytes in all. A returned promise is
   * awaited before the next piece; what it throws rejects the exec.
   */
  onStdout?: (text: string) => void | Promise<void>;
  /** The same for stderr. */
  onStderr?: (text: string) => void | Promise<void>;
  /**
   * With a callback (or alone, to keep a quiet command's connection through
   * a proxy that cuts idle ones): the server sends a keepalive after this
   * much quiet, 100 to 60,000 (default 15,000). The request fails with
   * ConnectionFailed after three of these (at least 30 s) with no byte.
   */
  keepaliveMs?: number;
}

export interface Usage {
  cpuMs: number;
  wallMs: number;
  peakMemoryKiB: number;
  peakPids: number;
}

/** The verdicts of docs/run-result.md. */
export type RunStatus =
  | "ok"
  | "nonzero_exit"
  | "signaled"
  | "timeout"
  | "memory_limit"
  | "error"
  | (string & {});

/** One command's verdict (docs/run-result.md) and its output. */
export interface ExecResult {
  /** Its exit status, or null when a signal ended it. */
  exitCode: number | null;
  /** The signal that ended it, or null. */
  signal: number | null;
  /** The CPU or wall limit ended it (and everything it started). */
  timedOut: boolean;
  status: RunStatus;
  /** The first limit it hit ("cpu", "wall", "memory", "pids", "fsize", "disk", "output", "seccomp"), or null. */
  limit: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Every byte it wrote, kept or not. */
  stdoutBytes: number;
  stderrBytes: number;
  usage: Usage;
  execId: number;
  limitsHit: string[];
  message: string | null;
  /** The sandbox's lease ended during it. */
  leaseEnded: boolean;
  /** The server's document as it came. */
  raw: Record<string, unknown>;
}

export interface FileEntry {
  name: string;
  type: "file" | "dir" | "link" | "other";
  size: number;
  mode: number;
  mtimeMs: number;
}

/** The server's document of a sandbox (docs/api.md, "Sandboxes"), as it comes. */
export interface SandboxInfo {
  id: number;
  state: "running" | "deleted" | "expired" | "lost" | "failed" | (string & {});
  isolation: string;
  image: string;
  vcpu: number;
  memory_mib: number;
  disk_mib: number;
  network: string;
  timeout_seconds: number;
  labels: Record<string, string>;
  env: Record<string, string>;
  created_ms: number;
  started_ms: number | null;
  ended_ms: number | null;
  end_reason: string | null;
  lease_end_ms: number | null;
  /** The create's max_cost_micros, or null. */
  max_cost_micros: number | null;
  /**
   * What it used so far: its commands' CPU (cpu_ms, cpu_seconds) and
   * GiB-seconds (gib_seconds: memory times their wall time), the memory it
   * reserved over its life (reserved_gib_seconds), and the metered cost of
   * both at the server's prices in millionths of a dollar (docs/api.md).
   */
  usage: {
    execs: number;
    cpu_ms: number;
    gib_seconds: number;
    cpu_seconds: number;
    reserved_gib_seconds: number;
    cost_micros: number;
  };
  /** The template pin "name@N" it started from, or null. */
  template: string | null;
  /** A create replayed with the same Idempotency-Key. */
  existing?: boolean;
  [member: string]: unknown;
}

/** setTimeout's options. */
export interface SetTimeoutOptions {
  /** 0 to 86400: the idle timeout from now on (0: none); unchanged when not given. */
  idleTimeoutSeconds?: number;
}

/**
 * A sandbox's files: any absolute path outside the system directories
 * (/usr, /etc, /bin, /sbin, /lib*, /proc, /dev, /sys, /var, /run), e.g.
 * /work, /tmp, /workspace/submission, /grader; a relative path is below /work.
 */
export interface Files {
  /** Write a file (its parents are made); resolves to its size. */
  write(path: string, data: string | Uint8Array | ArrayBuffer | ArrayBufferView, options?: { executable?: boolean }): Promise<number>;
  /** A file's bytes. */
  read(path: string): Promise<Uint8Array>;
  /** A file's text (UTF-8 unless told). */
  readText(path: string, encoding?: string): Promise<string>;
  /** A directory's entries (default /work), with `truncated` true when the server cut the listing. */
  list(dir?: string): Promise<FileEntry[] & { truncated: boolean }>;
  /** What is at `path` (a link is described, never followed), or null when nothing is there. */
  stat(path: string): Promise<FileEntry | null>;
  /** Whether anything (a file, a directory, a link) is at `path`. */
  exists(path: string): Promise<boolean>;
  /**
   * Remove a file, a link (not its target) or an empty directory; with
   * `recursive` a whole tree. Nothing there is NotFound; a directory that
   * is not empty, without `recursive`, is InvalidInput.
   */
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;
  /** Make a directory and its parents (one already there is fine). */
  makeDir(path: string): Promise<void>;
  /**
   * Copy the tree localDir to remoteDir (made with its parents) as one
   * gzip'd tar; resolves to how many files went. Regular files and
   * directories only, execute bits kept (0755, else 0644); a symlink or a
   * special file in localDir rejects with an Error naming it, before
   * anything is sent. A name past ustar's 255 bytes goes in a pax header.
   * Node only.
   */
  upload(localDir: string, remoteDir: string): Promise<number>;
  /**
   * Copy the tree remoteDir into localDir (made if missing) as one gzip'd
   * tar; resolves to how many files came. Links and special files in the
   * sandbox are left out by the server. Every name is checked before
   * anything is written (relative, no "..", a file or a directory), else it
   * rejects with a ProctorError of code "bad_archive"; a link already in
   * localDir is never written through. Node only.
   */
  download(remoteDir: string, localDir: string): Promise<number>;
}

/** A sandbox template of the course (docs/openapi.yaml, Template), as the server answers it. */
export interface TemplateInfo {
  id: number;
  name: string;
  /** 1, 2, ...: a name's versions in order; a removed one is never given again. */
  version: number;
  /** "name@version": what CreateOptions.template takes. */
  template: string;
  /** SHA-256 of the tree's archive (hex). */
  digest: string;
  bytes: number;
  /** The sandbox it was made from (null once that is gone from the store). */
  source_sandbox_id: number | null;
  created_ms: number;
  /** In the answer of Templates.remove(). */
  removed?: boolean;
  [member: string]: unknown;
}

/** The course's sandbox templates, made by sbx.snapshot(name). */
export declare class Templates {
  private constructor();
  /** Every template not removed, newest first (at most 1000). */
  static list(options?: ConnectionOptions): Promise<TemplateInfo[]>;
  /** One template, by its id (or its document); a removed one is NotFound. */
  static get(id: number | string | { id: number }, options?: ConnectionOptions): Promise<TemplateInfo>;
  /**
   * Remove a template: sandboxes made from it keep their files; its version
   * is never given again. Resolves to its document with `removed: true`;
   * NotFound when it is not there.
   */
  static remove(id: number | string | { id: number }, options?: ConnectionOptions): Promise<TemplateInfo>;
}

/** A throwaway sandbox on the server, alive until killed or its lease ends. */
export declare class Sandbox {
  private constructor();
  readonly id: number;
  readonly files: Files;
  /** The sandbox's document as last answered (by create, connect, getInfo or kill). */
  readonly info: SandboxInfo;

  /** Create a sandbox; retried only when no answer came, never making two. */
  static create(options?: CreateOptions): Promise<Sandbox>;
  /** A sandbox made elsewhere (another process), by its id. */
  static connect(id: number | string, options?: ConnectionOptions): Promise<Sandbox>;
  /** The course's sandboxes (newest first), by one label if given. */
  static list(filter?: ListFilter, options?: ConnectionOptions): Promise<SandboxInfo[]>;

  /**
   * Run one command and wait for its verdict: an argv array, or one string
   * run as `sh -c`. Past timeoutMs it is killed with everything it started.
   * With onStdout / onStderr (or keepaliveMs) the answer is streamed: the
   * output reaches the callbacks as it is produced, and the result is the
   * same. The sandbox ending while the command runs rejects with NotFound.
   */
  exec(cmd: readonly string[] | string, options?: ExecOptions): Promise<ExecResult>;
  /** State, labels, lease end, usage so far, asked now. */
  getInfo(): Promise<SandboxInfo>;
  /** The metered cost so far (info.usage.cost_micros), in millionths of a dollar, asked now. */
  costMicros(): Promise<number>;
  /**
   * End the lease `seconds` from now (1 to 86400), sooner or later than it
   * was; optionally set the idle timeout too. Resolves to the sandbox's
   * document; a sandbox already ended is NotFound.
   */
  setTimeout(seconds: number, options?: SetTimeoutOptions): Promise<SandboxInfo>;
  /**
   * Keep this sandbox's files (/work, /tmp and its own top-level
   * directories; links and special files left out) as the template
   * "name@N", N the name's next version. Sandbox.create({ template })
   * starts from it.
   */
  snapshot(name: string): Promise<TemplateInfo>;
  /** Every command run in the sandbox, oldest first (the API's documents). */
  execs(): Promise<Array<Record<string, unknown>>>;
  /** Destroy the sandbox now (one already ended is left as it is). */
  kill(): Promise<void>;
  /** The same as kill(). */
  close(): Promise<void>;
  /** `await using`: kill on leaving the block; a server's refusal is not thrown. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** An answer of the server that is not a success (or no answer at all). */
export declare class ProctorError extends Error {
  constructor(status: number, code: string, message: string, retryAfter?: number | null, cause?: unknown);
  /**
   * The HTTP status; 0 when no answer came. An error line of a streamed
   * exec (answered 200) carries the status its code has in docs/api.md
   * (not_found 404, unavailable 503, ...).
   */
  readonly status: number;
  /**
   * The server's stable code ("not_found", "capacity", ...); the client's
   * own: "connection_failed" when no answer came (or a stream broke, or
   * went quiet), "bad_archive" when a download's archive is refused,
   * "bad_stream" when a streamed answer's line is not JSON.
   */
  readonly code: string;
  /** Seconds, from Retry-After; null without one. */
  readonly retryAfter: number | null;
}
/** No such sandbox or file in the token's course (or it ended). */
export declare class NotFound extends ProctorError {}
/** The request was refused as it is: a member, a path, a query. */
export declare class InvalidInput extends ProctorError {}
/** No token, or not a valid one. */
export declare class Unauthorized extends ProctorError {}
/** The token's scope is too small. */
export declare class Forbidden extends ProctorError {}
/** No room for a sandbox now (the host's slots, or the token's max_live_sandboxes), also after waitForCapacityMs; retryAfter says when to try again. */
export declare class Capacity extends ProctorError {}
/** The course's daily CPU cap, or the token's daily_spend_micros, is spent. */
export declare class BudgetExceeded extends ProctorError {}
/** The server cannot do it now (its store, or the sandbox's host). */
export declare class Unavailable extends ProctorError {}
/** No answer came from the server (refused, reset, or timed out). */
export declare class ConnectionFailed extends ProctorError {}
