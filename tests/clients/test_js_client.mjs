// The JavaScript client (clients/js) against a real `proctor serve` holding
// real jail sandboxes, on a SQLite store in a temporary directory.
//
// Run by meson (tests/meson.build) with PROCTOR set to the built proctor;
// imports the client from the source tree; needs root (sandboxes), else
// exits 77 (skipped). Node's test runner reports each test; the last line is
// "N passed, N failed". PROCTOR_TEST_ONLY=REGEX runs only the tests it names.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { after, test } from "node:test";
import zlib from "node:zlib";

import { Server, closingLine } from "./proctorserve.mjs";

import {
  Capacity,
  ConnectionFailed,
  InvalidInput,
  NotFound,
  ProctorError,
  Sandbox,
  Templates,
  Unauthorized,
  Unavailable,
} from "../../clients/js/src/index.js";

const PROCTOR = process.env.PROCTOR || "proctor";
const SLOTS = 3;

if (process.getuid() !== 0) {
  console.error("test_js_client: needs root (sandboxes)");
  process.exit(77);
}

// Counted for the closing line; node's runner reports each test too.
const counts = closingLine();

// ---- the server: proctor serve --workers 0 on a fresh store, two courses ----

const S = new Server(PROCTOR, { prefix: "proctor-jsclient.", slots: SLOTS, courses: ["cs101", "other"] });
const { dir, tokens } = S;
const url = await S.ready();

counts.failed = 0;

const cs101 = { server: url, token: tokens.cs101 };
const made = []; // every sandbox a test made, killed at the end if a test did not

async function sbx(opts = {}) {
  const s = await Sandbox.create({ ...cs101, ...opts });
  made.push(s);
  return s;
}

// PROCTOR_TEST_ONLY=REGEX runs only the tests whose names match (the others
// are reported skipped), as node's --test-name-pattern would.
const only = process.env.PROCTOR_TEST_ONLY ? new RegExp(process.env.PROCTOR_TEST_ONLY) : null;

// Each test's sandboxes are killed when it ends, passed or not, so that one
// failure does not hold the slots the next test needs.
function check(name, fn) {
  if (only && !only.test(name)) {
    test(name, { skip: "not in PROCTOR_TEST_ONLY" }, () => {});
    return;
  }
  test(name, async (t) => {
    const first = made.length;
    try {
      await fn(t);
      counts.passed++;
    } catch (err) {
      counts.failed++;
      throw err;
    } finally {
      for (const s of made.slice(first)) {
        if (s.info.state === "running") await s.kill().catch(() => {});
      }
    }
  });
}

// ---- the tests ----

check("create, write, exec, read, list and kill", async () => {
  const s = await sbx({ labels: { student: "ada" }, env: { GREETING: "hi" }, memoryMiB: 256 });
  const info = await s.getInfo();
  assert.equal(info.state, "running");
  assert.deepEqual(info.labels, { student: "ada" });
  assert.equal(info.memory_mib, 256);
  assert.equal(await s.files.write("/work/sub/hello.py", "print(6 * 7)\n"), 13);
  let r = await s.exec(["python3", "sub/hello.py"]);
  assert.deepEqual([r.status, r.exitCode, r.stdout, r.stderr], ["ok", 0, "42\n", ""]);
  assert.equal(r.timedOut, false);
  assert.equal(r.signal, null);
  assert.equal(r.limit, null);
  assert.ok(r.execId > 0);
  assert.equal(typeof r.usage.cpuMs, "number");
  assert.ok(r.usage.wallMs >= 0 && r.usage.peakMemoryKiB > 0, JSON.stringify(r.usage));
  // The exit status passes through.
  r = await s.exec("exit 3");
  assert.deepEqual([r.status, r.exitCode], ["nonzero_exit", 3]);
  // A file written by a command is read back, and listed.
  await s.exec(["sh", "-c", "printf 'x%.0s' $(seq 1 5000) > /work/out.txt"]);
  assert.equal(await s.files.readText("/work/out.txt"), "x".repeat(5000));
  const names = Object.fromEntries((await s.files.list("/work")).map((e) => [e.name, e]));
  assert.equal(names["out.txt"].type, "file");
  assert.equal(names["out.txt"].size, 5000);
  assert.equal(typeof names["out.txt"].mtimeMs, "number");
  assert.equal(names.sub.type, "dir");
  assert.equal(await s.files.exists("/work/out.txt"), true);
  assert.equal(await s.files.exists("/work/nothing-here"), false);
  // An executable file runs.
  await s.files.write("/work/run.sh", "#!/bin/sh\necho ran\n", { executable: true });
  assert.equal((await s.exec(["/work/run.sh"])).stdout, "ran\n");
  // Every command is on record, with its verdict.
  const execs = await s.execs();
  assert.equal(execs.length, 4);
  assert.deepEqual(execs.at(-1).argv, ["/work/run.sh"]);
  assert.equal(execs.at(-1).status, "ok");
  const sid = s.id;
  await s.kill();
  assert.equal(s.info.state, "deleted");
  // Killed: a second client sees it so, and exec says NotFound.
  const gone = await Sandbox.connect(sid, cs101);
  assert.equal((await gone.getInfo()).state, "deleted");
  await assert.rejects(gone.exec(["true"]), NotFound);
});

check("binary bytes cross intact both ways", async () => {
  const s = await sbx();
  const blob = new Uint8Array(256 * 40).map((_, i) => i & 0xff);
  assert.equal(await s.files.write("/tmp/blob.bin", blob), blob.length);
  const back = await s.files.read("/tmp/blob.bin");
  assert.ok(back instanceof Uint8Array);
  assert.deepEqual(back, blob);
  // The bytes the sandbox sees are the same: checksummed inside.
  const sum = await s.exec(["sh", "-c", "od -An -tu1 -v /tmp/blob.bin | tr -s ' ' '\\n' | grep -c ."]);
  assert.equal(sum.stdout.trim(), String(blob.length));
  // A file made inside with every byte value comes back intact too.
  await s.exec(["sh", "-c", "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done > /work/all.bin"]);
  assert.deepEqual(await s.files.read("/work/all.bin"), blob.subarray(0, 256));
  // An empty file is a file.
  assert.equal(await s.files.write("/work/empty", new Uint8Array(0)), 0);
  assert.equal((await s.files.read("/work/empty")).length, 0);
  await s.kill();
});

check("exec: stdin, cwd, env, and the sandbox's env", async () => {
  const s = await sbx({ env: { GREETING: "hi" } });
  let r = await s.exec(["cat"], { stdin: "from stdin ✓" });
  assert.equal(r.stdout, "from stdin ✓");
  r = await s.exec(["od", "-An", "-tx1"], { stdin: new Uint8Array([0, 1, 0xfe, 0xff]) });
  assert.equal(r.stdout.trim(), "00 01 fe ff");
  r = await s.exec(["cat"]); // no stdin: end of input at once
  assert.deepEqual([r.exitCode, r.stdout], [0, ""]);
  await s.files.write("/work/sub/deeper/x", "x");
  r = await s.exec("echo $GREETING; pwd", { cwd: "/work/sub" });
  assert.equal(r.stdout, "hi\n/work/sub\n");
  r = await s.exec(["pwd"], { cwd: "/work/sub/deeper" });
  assert.equal(r.stdout, "/work/sub/deeper\n");
  r = await s.exec(["sh", "-c", 'echo "$GREETING $EXTRA"'], { env: { EXTRA: "there", GREETING: "hello" } });
  assert.equal(r.stdout, "hello there\n");
  // The per-command env is that command's only.
  r = await s.exec(["sh", "-c", 'echo "[$EXTRA]"']);
  assert.equal(r.stdout, "[]\n");
  await s.kill();
});

check("exec timeout: timedOut, and nothing it started runs on", async () => {
  const s = await sbx();
  const t0 = Date.now();
  let r = await s.exec("sleep 300 & sleep 300", { timeoutMs: 500 });
  assert.ok(Date.now() - t0 < 30_000);
  assert.equal(r.timedOut, true);
  assert.equal(r.status, "timeout");
  assert.equal(r.limit, "wall");
  assert.equal(r.exitCode, null);
  // The background sleep is gone on the next exec.
  r = await s.exec("cat /proc/[0-9]*/comm | grep -c '^sleep$' || true");
  assert.equal(r.stdout.trim(), "0", JSON.stringify(r));
  assert.equal((await s.exec(["echo", "alive"])).stdout, "alive\n");
  await s.kill();
});

check("exec: output past the cap is counted, never silently cut", async () => {
  const s = await sbx();
  const r = await s.exec(["sh", "-c", "yes flood"], { maxOutputBytes: 4096, timeoutMs: 1000 });
  assert.equal(r.stdoutTruncated, true);
  assert.ok(new TextEncoder().encode(r.stdout).length <= 4096);
  assert.ok(r.stdoutBytes > 4096, String(r.stdoutBytes));
  assert.ok(r.limitsHit.length > 0);
  await s.kill();
});

check("upload: a local tree, execute bits kept, a symlink refused by name", async () => {
  const local = fs.mkdtempSync(path.join(dir, "upload."));
  fs.mkdirSync(path.join(local, "pkg", "inner"), { recursive: true });
  fs.writeFileSync(path.join(local, "main.py"), "import pkg.inner.mod as m\nprint(m.X)\n");
  fs.writeFileSync(path.join(local, "pkg", "__init__.py"), "");
  fs.writeFileSync(path.join(local, "pkg", "inner", "__init__.py"), "");
  fs.writeFileSync(path.join(local, "pkg", "inner", "mod.py"), "X = 'deep'\n");
  fs.writeFileSync(path.join(local, "go.sh"), "#!/bin/sh\necho go\n", { mode: 0o755 });
  const s = await sbx();
  assert.equal(await s.files.upload(local, "/work/submission/"), 5);
  let r = await s.exec(["python3", "main.py"], { cwd: "/work/submission" });
  assert.equal(r.stdout, "deep\n", JSON.stringify(r));
  r = await s.exec(["./go.sh"], { cwd: "/work/submission" });
  assert.equal(r.stdout, "go\n");
  // A symlink (or a FIFO) anywhere in the tree: refused here, naming it,
  // and nothing is sent.
  const link = path.join(local, "pkg", "link");
  fs.symlinkSync("/etc/passwd", link);
  await assert.rejects(s.files.upload(local, "/work/second"), (err) => {
    assert.ok(!(err instanceof ProctorError), String(err));
    assert.ok(err.message.includes(link) && /symbolic link/.test(err.message), err.message);
    return true;
  });
  fs.unlinkSync(link);
  execFileSync("mkfifo", [path.join(local, "fifo")]);
  await assert.rejects(s.files.upload(local, "/work/second"), /fifo is a special file/);
  assert.equal(await s.files.exists("/work/second"), false);
  // Not a directory: refused too.
  await assert.rejects(s.files.upload(path.join(local, "main.py"), "/work/second"), /not a directory/);
  await s.kill();
});

check("await using (or its method) kills the sandbox", async (t) => {
  assert.equal(typeof Symbol.asyncDispose, "symbol", "Symbol.asyncDispose (node >= 18.18)");
  let block = null;
  try {
    const AsyncFunction = (async () => {}).constructor;
    block = new AsyncFunction("make", "out", "await using s = await make(); out.s = s; throw new Error('boom');");
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
  }
  let s;
  if (block) {
    const out = {};
    await assert.rejects(block(() => sbx(), out), /boom/);
    s = out.s;
  } else {
    // No `await using` syntax here (node < 24): do what it does.
    t.diagnostic(`no 'await using' in node ${process.version}: calling [Symbol.asyncDispose]() as it would`);
    s = await sbx();
    try {
      assert.equal((await s.exec(["true"])).exitCode, 0);
    } finally {
      await s[Symbol.asyncDispose]();
    }
  }
  assert.equal((await s.getInfo()).state, "deleted");
  // Disposing of an ended sandbox never throws; close() is kill().
  await s[Symbol.asyncDispose]();
  const c = await sbx();
  await c.close();
  assert.equal((await c.getInfo()).state, "deleted");
});

check("bad input is refused with InvalidInput, missing things NotFound", async () => {
  const s = await sbx();
  // An argv that is not an array of strings is the server's refusal.
  for (const cmd of [42, { 0: "ls" }, ["ls", 1], null]) {
    await assert.rejects(s.exec(cmd), (err) => {
      assert.ok(err instanceof InvalidInput, `${JSON.stringify(cmd)}: ${err}`);
      assert.equal(err.status, 422);
      assert.equal(err.code, "invalid_input");
      assert.ok(err.message.length > 0);
      return true;
    });
  }
  await assert.rejects(s.exec(["true"], { timeoutMs: 0 }), InvalidInput);
  // A misspelt option is the client's refusal, before any request.
  await assert.rejects(s.exec(["true"], { timeout_ms: 5 }), TypeError);
  await assert.rejects(Sandbox.create({ ...cs101, memoryMib: 64 }), TypeError);
  for (const p of ["/work/../etc/passwd", "/etc/passwd", "relative/../../x"]) {
    await assert.rejects(s.files.write(p, "x"), InvalidInput, p);
  }
  // A symlink the sandbox's own program planted is never followed.
  await s.exec(["ln", "-s", "/etc/shadow", "/work/link"]);
  await assert.rejects(s.files.read("/work/link"), InvalidInput);
  await assert.rejects(s.files.read("/work/nothing-here"), NotFound);
  await assert.rejects(Sandbox.create({ ...cs101, vcpu: 999 }), InvalidInput);
  await s.kill();
  await assert.rejects(Sandbox.connect(999999, cs101), NotFound);
  await assert.rejects(Sandbox.connect("nope", cs101), TypeError);
  await assert.rejects(Sandbox.create({ server: url, token: "prt_" + "0".repeat(80) }), (err) => {
    assert.ok(err instanceof Unauthorized);
    assert.equal(err.status, 401);
    return true;
  });
});

check("another course sees nothing; a second client drives the same sandbox", async () => {
  const other = { server: url, token: tokens.other };
  const s = await sbx({ labels: { student: "grace" } });
  await assert.rejects(Sandbox.connect(s.id, other), (err) => {
    assert.ok(err instanceof NotFound);
    assert.equal(err.code, "not_found");
    assert.equal(err.status, 404);
    return true;
  });
  await s.files.write("/work/shared.txt", "shared");
  const again = await Sandbox.connect(s.id, cs101);
  assert.equal((await again.exec(["cat", "shared.txt"])).stdout, "shared");
  const listed = (await Sandbox.list({}, cs101)).map((x) => x.id);
  assert.ok(listed.includes(s.id));
  const byLabel = await Sandbox.list({ labels: { student: "grace" } }, cs101);
  assert.deepEqual(byLabel.map((x) => x.id), [s.id]);
  assert.ok(!(await Sandbox.list({}, other)).map((x) => x.id).includes(s.id));
  await assert.rejects(Sandbox.list({ labels: { a: "1", b: "2" } }, cs101), RangeError);
  await s.kill();
  assert.ok(!(await Sandbox.list({}, cs101)).map((x) => x.id).includes(s.id));
  assert.ok((await Sandbox.list({ live: false }, cs101)).map((x) => x.id).includes(s.id));
});

check("server and token from PROCTOR_SERVER and PROCTOR_TOKEN", async () => {
  const saved = [process.env.PROCTOR_SERVER, process.env.PROCTOR_TOKEN];
  process.env.PROCTOR_SERVER = url + "/";
  process.env.PROCTOR_TOKEN = tokens.cs101;
  try {
    const s = await Sandbox.create();
    made.push(s);
    assert.equal((await s.exec(["echo", "env"])).stdout, "env\n");
    await s.kill();
    delete process.env.PROCTOR_TOKEN;
    await assert.rejects(Sandbox.create(), TypeError);
  } finally {
    for (const [k, v] of [["PROCTOR_SERVER", saved[0]], ["PROCTOR_TOKEN", saved[1]]]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

check("more creates than slots is Capacity with Retry-After", async () => {
  const held = [];
  try {
    for (let i = 0; i < SLOTS; i++) held.push(await sbx());
    await assert.rejects(sbx(), (err) => {
      assert.ok(err instanceof Capacity, String(err));
      assert.equal(err.status, 429);
      assert.equal(err.code, "capacity");
      assert.ok(err.retryAfter > 0, String(err.retryAfter));
      return true;
    });
  } finally {
    for (const s of held) await s.kill();
  }
  // The slots are free again.
  const s = await sbx();
  assert.equal((await s.exec(["true"])).exitCode, 0);
  await s.kill();
});

check("create is retried only when no answer came, never making two", async () => {
  // A proxy that forwards every request but, the first time, drops the
  // connection after the server answered: the client saw no answer.
  const keys = [];
  let requests = 0;
  const proxy = http.createServer(async (req, res) => {
    requests++;
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    if (req.headers["idempotency-key"]) keys.push(req.headers["idempotency-key"]);
    const answer = await fetch(url + req.url, {
      method: req.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await answer.arrayBuffer());
    if (requests === 1) {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(body);
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  const via = { server: `http://127.0.0.1:${proxy.address().port}`, token: tokens.cs101 };
  try {
    const s = await sbx({ ...via, labels: { retry: "once" } });
    assert.equal(requests, 2);
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
    assert.match(keys[0], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(s.info.existing, true);
    assert.deepEqual((await Sandbox.list({ labels: { retry: "once" } }, cs101)).map((x) => x.id), [s.id]);
    await s.kill();
    // A refusal is an answer: not retried.
    requests = 10;
    await assert.rejects(Sandbox.create({ ...via, vcpu: 999 }), InvalidInput);
    assert.equal(requests, 11);
  } finally {
    proxy.closeAllConnections?.();
    await new Promise((r) => proxy.close(r));
  }
  // Nobody there: ConnectionFailed after the retries, status 0.
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, "127.0.0.1", r));
  const port = closed.address().port;
  await new Promise((r) => closed.close(r));
  await assert.rejects(
    Sandbox.create({ server: `http://127.0.0.1:${port}`, token: tokens.cs101, retries: 1 }),
    (err) => {
      assert.ok(err instanceof ConnectionFailed && err instanceof ProctorError, String(err));
      assert.equal(err.status, 0);
      assert.equal(err.code, "connection_failed");
      return true;
    },
  );
});


// ---- files anywhere outside the system's directories, trees as one tar ----

const sha256 = (data) => crypto.createHash("sha256").update(data).digest("hex");

check("a grading loop writes where it likes outside the system", async () => {
  const s = await sbx();
  await s.files.write("/workspace/submission/solution.py", "def add(a, b):\n    return a + b\n");
  await s.files.write(
    "/grader/test_hidden.py",
    "import sys\nsys.path.insert(0, '/workspace/submission')\n" +
      "import solution\nassert solution.add(2, 3) == 5\n" +
      "open('/workspace/report.txt', 'w').write('passed')\n",
  );
  let r = await s.exec(["python3", "/grader/test_hidden.py"], { cwd: "/workspace/submission" });
  assert.deepEqual([r.status, r.exitCode], ["ok", 0], r.stderr);
  assert.equal(await s.files.readText("/workspace/report.txt"), "passed");
  assert.deepEqual((await s.files.list("/workspace")).map((e) => e.name).sort(), ["report.txt", "submission"]);
  // The program sees its own directories, and the system's read-only.
  r = await s.exec("ls -d /workspace /grader && touch /usr/x /etc/x /newtop 2>&1; true");
  assert.ok(r.stdout.includes("/grader\n/workspace\n"), r.stdout);
  const refusals = r.stdout.split("Read-only file system").length - 1 + (r.stdout.split("Permission denied").length - 1);
  assert.equal(refusals, 3, r.stdout);
  for (const bad of ["/usr/lib/x.py", "/etc/passwd", "/lib64/x", "/proc/1/x", "/", "/var/x", "/run/x", "/grader/../etc/x"]) {
    await assert.rejects(s.files.write(bad, "x"), InvalidInput, bad);
  }
  // A top-level directory made after the sandbox ran something is there in
  // the next command too.
  await s.files.write("/autograder/source/run", "#!/bin/sh\necho graded\n", { executable: true });
  assert.equal((await s.exec(["/autograder/source/run"])).stdout, "graded\n");
  await s.kill();
});

check("upload and download a tree as one stream", async () => {
  const d = fs.mkdtempSync(path.join(dir, "tree."));
  const src = path.join(d, "src");
  fs.mkdirSync(path.join(src, "pkg", "deep", "er"), { recursive: true });
  fs.mkdirSync(path.join(src, "empty"));
  fs.writeFileSync(path.join(src, "main.py"), "print('main')\n");
  const blob = crypto.randomBytes(3 << 20); // 3 MiB, past any small threshold
  fs.writeFileSync(path.join(src, "pkg", "deep", "er", "data.bin"), blob);
  fs.writeFileSync(path.join(src, "run.sh"), "#!/bin/sh\necho ran\n", { mode: 0o755 });
  const want = sha256(blob);
  const s = await sbx();
  assert.equal(await s.files.upload(src, "/workspace/sub"), 3);
  assert.equal((await s.exec(["./run.sh"], { cwd: "/workspace/sub" })).stdout, "ran\n");
  // (The empty directory is in the tar, but the server's intake makes only
  // the directories its files need: not checked here.)
  const r = await s.exec("cd /workspace/sub && sha256sum pkg/deep/er/data.bin");
  assert.ok(r.stdout.includes(want), JSON.stringify(r));
  assert.equal((await s.files.stat("/workspace/sub/pkg/deep/er/data.bin")).size, blob.length);
  // A second upload into the same directory adds to it.
  fs.rmSync(path.join(src, "main.py"));
  fs.writeFileSync(path.join(src, "more.txt"), "more");
  await s.files.upload(src, "/workspace/sub");
  assert.equal(await s.files.exists("/workspace/sub/main.py"), true);
  // Download: the same bytes and modes; what the program made too, and
  // never its link.
  await s.exec("echo out > /workspace/sub/made.txt && ln -s /etc/passwd /workspace/sub/link");
  const back = path.join(d, "back");
  assert.equal(await s.files.download("/workspace/sub", back), 5);
  assert.equal(sha256(fs.readFileSync(path.join(back, "pkg", "deep", "er", "data.bin"))), want);
  assert.equal(fs.statSync(path.join(back, "run.sh")).mode & 0o777, 0o755);
  assert.equal(fs.statSync(path.join(back, "more.txt")).mode & 0o777, 0o644);
  assert.equal(fs.existsSync(path.join(back, "link")), false);
  assert.equal(fs.readFileSync(path.join(back, "made.txt"), "utf8"), "out\n");
  await assert.rejects(s.files.download("/workspace/sub/made.txt", back), InvalidInput);
  await assert.rejects(s.files.download("/workspace/nothing", back), NotFound);
  await s.kill();
});

check("upload: names past ustar's 100 bytes, past 255, and not ASCII", async () => {
  const src = fs.mkdtempSync(path.join(dir, "long."));
  // Split into ustar's prefix and name (192 bytes: 141 + 50) ...
  const split = path.join("a".repeat(70), "b".repeat(70), "c".repeat(40), "split.txt");
  // ... a 150-byte last part (no split fits: a pax header), in a 400-byte path ...
  const pax = path.join("p".repeat(120), "q".repeat(120), "f".repeat(150));
  // ... and UTF-8: short, split (80 + 80 bytes), in a pax header (120 + 120).
  const accents = "ünïcödé ✓.txt";
  const accentsSplit = path.join("é".repeat(40), "ü".repeat(40));
  const accentsPax = path.join("é".repeat(60), "ü".repeat(60));
  const files = {
    [split]: "split\n",
    [pax]: "pax\n",
    [accents]: "accents\n",
    [accentsSplit]: "split accents\n",
    [accentsPax]: "pax accents\n",
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.join(src, path.dirname(rel)), { recursive: true });
    fs.writeFileSync(path.join(src, rel), text);
  }
  assert.ok(Buffer.byteLength(pax) > 255 && Buffer.byteLength(split) > 100);
  const s = await sbx();
  assert.equal(await s.files.upload(src, "/workspace/long"), 5);
  for (const [rel, text] of Object.entries(files)) {
    assert.equal(await s.files.readText(`/workspace/long/${rel}`), text, rel);
  }
  // Back: the server packs ustar, which holds a name of at most 155 + 100
  // bytes split at a "/", so the two trees whose names need pax stay
  // there; the others come back as they went.
  for (const rel of [pax, accentsPax]) {
    await s.files.remove(`/workspace/long/${rel.split("/")[0]}`, { recursive: true });
  }
  const back = path.join(src, "..", path.basename(src) + ".back");
  assert.equal(await s.files.download("/workspace/long", back), 3);
  for (const rel of [split, accents, accentsSplit]) {
    assert.equal(fs.readFileSync(path.join(back, rel), "utf8"), files[rel], rel);
  }
  await s.kill();
});

/** A plain tar of hand-made members: { name, type ("0", "1", "2", "3", "5", "6"), data, link }. */
function tarOf(...members) {
  const blocks = [];
  for (const { name, type = "0", data = "", link = "" } of members) {
    const body = Buffer.from(data);
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write("0000644\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write(body.length.toString(8).padStart(11, "0") + "\0", 124);
    h.write("00000000000\0", 136);
    h.write(type, 156);
    h.write(link, 157);
    h.write("ustar\0" + "00", 257);
    h.fill(0x20, 148, 156);
    h.write(h.reduce((a, b) => a + b, 0).toString(8).padStart(6, "0") + "\0 ", 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

async function putRaw(s, data, remote = "/workspace/x") {
  const res = await fetch(`${url}/v1/sandboxes/${s.id}/archive?path=${encodeURIComponent(remote)}`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${tokens.cs101}`, "Content-Type": "application/x-tar" },
    body: data,
  });
  return { status: res.status, doc: await res.json().catch(() => null) };
}

check("a hostile archive is refused with invalid_input and changes nothing", async () => {
  const s = await sbx({ diskMiB: 8 });
  const hostile = {
    "symlink out": tarOf({ name: "ok.txt", data: "x" }, { name: "evil", type: "2", link: "/etc/passwd" }),
    "hard link": tarOf({ name: "a", data: "x" }, { name: "b", type: "1", link: "a" }),
    "dot dot": tarOf({ name: "../../escape.txt", data: "x" }),
    absolute: tarOf({ name: "/tmp/abs.txt", data: "x" }),
    fifo: tarOf({ name: "pipe", type: "6" }),
    device: tarOf({ name: "dev", type: "3" }),
    "not an archive": Buffer.from("this is not a tar file at all".repeat(10)),
  };
  for (const [what, data] of Object.entries(hostile)) {
    const { status, doc } = await putRaw(s, data);
    assert.equal(status, 422, `${what}: ${JSON.stringify(doc)}`);
    assert.equal(doc?.error?.code, "invalid_input", what);
  }
  assert.equal(await s.files.exists("/workspace/x"), false);
  assert.equal(await s.files.exists("/tmp/abs.txt"), false);
  // A bomb: 64 MiB of zeros in a few KiB, against an 8 MiB disk.
  const bomb = zlib.gzipSync(tarOf({ name: "zeros", data: Buffer.alloc(64 << 20) }));
  assert.ok(bomb.length < 1 << 20);
  const { status, doc } = await putRaw(s, bomb);
  assert.deepEqual([status, doc?.error?.code], [422, "invalid_input"], JSON.stringify(doc));
  assert.equal(await s.files.exists("/workspace/x"), false);
  // The sandbox still works, and nothing landed on the host.
  assert.equal((await s.exec(["true"])).status, "ok");
  assert.equal(fs.existsSync("/escape.txt"), false);
  await s.kill();
});

check("download refuses a hostile archive and writes nothing outside", async () => {
  // A server that answers its own archive: the client checks every name
  // again, whatever the server sent.
  let archive;
  const fake = http.createServer((req, res) => {
    if (req.url.startsWith("/v1/sandboxes/7/archive")) {
      res.writeHead(200, { "Content-Type": "application/gzip" });
      res.end(archive);
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ id: 7, state: "running" }));
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  try {
    const s = await Sandbox.connect(7, { server: `http://127.0.0.1:${fake.address().port}`, token: "prt_x" });
    const base = fs.mkdtempSync(path.join(dir, "hostile."));
    const hostile = {
      "dot dot": tarOf({ name: "ok.txt", data: "x" }, { name: "../escape.txt", data: "x" }),
      absolute: tarOf({ name: "/tmp/proctor-js-abs.txt", data: "x" }),
      symlink: tarOf({ name: "evil", type: "2", link: "/etc/passwd" }),
      "hard link": tarOf({ name: "a", data: "x" }, { name: "b", type: "1", link: "a" }),
      fifo: tarOf({ name: "pipe", type: "6" }),
      "cut short": tarOf({ name: "big", data: "y".repeat(4096) }).subarray(0, 1536),
    };
    for (const [what, data] of Object.entries(hostile)) {
      archive = zlib.gzipSync(data);
      await assert.rejects(s.files.download("/workspace", path.join(base, "in")), (err) => {
        assert.ok(err instanceof ProctorError, `${what}: ${err}`);
        assert.equal(err.code, "bad_archive", what);
        return true;
      });
    }
    // Every name is checked before anything is written.
    assert.equal(fs.existsSync(path.join(base, "in")), false);
    assert.equal(fs.existsSync(path.join(base, "escape.txt")), false);
    assert.equal(fs.existsSync("/tmp/proctor-js-abs.txt"), false);
    // A link already in the local directory: the file is not written
    // through it.
    fs.mkdirSync(path.join(base, "in"));
    fs.symlinkSync("/etc/hostname", path.join(base, "in", "ok.txt"));
    archive = zlib.gzipSync(tarOf({ name: "ok.txt", data: "x" }));
    await assert.rejects(s.files.download("/workspace", path.join(base, "in")), { code: "ELOOP" });
  } finally {
    await new Promise((r) => fake.close(r));
  }
});

check("remove, makeDir, stat", async () => {
  const s = await sbx();
  await s.files.makeDir("/workspace/a/b/c");
  await s.files.makeDir("/workspace/a/b/c"); // again: fine
  const st = await s.files.stat("/workspace/a/b/");
  assert.deepEqual([st.name, st.type], ["b", "dir"]);
  assert.equal(typeof st.mtimeMs, "number");
  assert.equal(await s.files.exists("/workspace"), true);
  assert.equal(await s.files.exists("/work"), true);
  assert.equal(await s.files.stat("/workspace/nothing"), null);
  await s.files.write("/workspace/a/b/c/f.txt", "f");
  assert.equal((await s.files.stat("/workspace/a/b/c/f.txt")).size, 1);
  await assert.rejects(s.files.makeDir("/workspace/a/b/c/f.txt/sub"), InvalidInput);
  await assert.rejects(s.files.remove("/workspace/a"), InvalidInput); // not empty
  await assert.rejects(s.files.remove("/workspace/a", { recurse: true }), TypeError);
  // A link the program planted goes; its target stays.
  await s.exec(["ln", "-s", "/workspace/a/b/c/f.txt", "/work/link"]);
  assert.equal((await s.files.stat("/work/link")).type, "link");
  await s.files.remove("/work/link");
  assert.equal(await s.files.exists("/work/link"), false);
  assert.equal(await s.files.exists("/workspace/a/b/c/f.txt"), true);
  // A link on the way is never followed.
  await s.exec(["ln", "-s", "/workspace/a", "/work/via"]);
  await assert.rejects(s.files.remove("/work/via/b/c/f.txt"), InvalidInput);
  await s.files.remove("/workspace/a", { recursive: true });
  assert.equal(await s.files.exists("/workspace/a"), false);
  await assert.rejects(s.files.remove("/workspace/a"), NotFound);
  await assert.rejects(s.files.remove("/work"), InvalidInput);
  for (const bad of ["/etc/x", "/usr", "relative/../../x"]) {
    await assert.rejects(s.files.makeDir(bad), InvalidInput, bad);
    await assert.rejects(s.files.stat(bad), InvalidInput, bad);
  }
  await s.kill();
});

// ---- the lease and the idle timeout, each its own clock ----

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitState(s, not, ms = 20_000) {
  const deadline = Date.now() + ms;
  while ((await s.getInfo()).state === not && Date.now() < deadline) await sleep(300);
  return s.getInfo();
}

check("setTimeout shortens and extends the lease", async () => {
  const s = await sbx({ timeoutSeconds: 2 });
  const info = await s.setTimeout(300);
  assert.equal(info.state, "running");
  assert.equal(s.info, info);
  await sleep(3000);
  assert.equal((await s.getInfo()).state, "running");
  await s.setTimeout(1);
  assert.equal((await waitState(s, "running")).state, "expired");
  await assert.rejects(s.setTimeout(10), NotFound);
  await assert.rejects(s.setTimeout(10, { idle: 3 }), TypeError);
});

check("setTimeout refuses what is out of range, naming the member", async () => {
  const s = await sbx();
  for (const [seconds, opts, member] of [
    [0, undefined, "timeout_seconds"],
    [86401, undefined, "timeout_seconds"],
    [10, { idleTimeoutSeconds: -1 }, "idle_timeout_seconds"],
  ]) {
    await assert.rejects(s.setTimeout(seconds, opts), (err) => {
      assert.ok(err instanceof InvalidInput, String(err));
      assert.ok(err.message.includes(member), err.message);
      return true;
    });
  }
  await assert.rejects(sbx({ idleTimeoutSeconds: 86401 }), InvalidInput);
  await s.kill();
});

check("an idle timeout ends a sandbox nobody uses", async () => {
  const s = await sbx({ idleTimeoutSeconds: 2 });
  // A command longer than the idle timeout is not idleness.
  assert.equal((await s.exec(["sleep", "3"])).status, "ok");
  assert.equal((await s.exec(["true"])).status, "ok");
  const info = await waitState(s, "running");
  assert.equal(info.state, "expired");
  assert.match(info.end_reason ?? "", /idle/);
});

check("setTimeout sets the idle timeout of a running sandbox", async () => {
  const s = await sbx();
  await s.setTimeout(300, { idleTimeoutSeconds: 1 });
  const info = await waitState(s, "running");
  assert.equal(info.state, "expired");
  assert.match(info.end_reason ?? "", /idle/);
});

check("create sends idleTimeoutSeconds and waitForCapacityMs as the API's members", async () => {
  const bodies = [];
  const fake = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    bodies.push(JSON.parse(Buffer.concat(chunks).toString() || "null"));
    res.writeHead(201, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ id: 9, state: "running" }));
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  try {
    const via = { server: `http://127.0.0.1:${fake.address().port}`, token: "prt_x" };
    await Sandbox.create({ ...via, idleTimeoutSeconds: 30, waitForCapacityMs: 5000, timeoutSeconds: 60 });
    assert.deepEqual(bodies[0], { timeout_seconds: 60, idle_timeout_seconds: 30, wait_for_capacity_ms: 5000 });
    await Sandbox.create(via);
    assert.deepEqual(bodies[1], {});
  } finally {
    await new Promise((r) => fake.close(r));
  }
});

// ---- streamed exec: output as it is produced, keepalives through an idle proxy ----

check("streamed exec: output arrives as it is produced, a split character whole", async () => {
  const s = await sbx();
  const got = [];
  const t0 = Date.now();
  const r = await s.exec("echo first; sleep 1.5; echo second >&2; printf 'h\\303'; sleep 0.2; printf '\\251llo\\n'", {
    onStdout: (t) => got.push(["out", t, Date.now() - t0]),
    onStderr: (t) => got.push(["err", t, Date.now() - t0]),
  });
  const done = Date.now() - t0;
  assert.equal(r.status, "ok");
  assert.equal(r.exitCode, 0);
  assert.ok(r.execId > 0);
  // A character split across two writes reaches the callbacks whole.
  assert.equal(r.stdout, "first\nh\u00e9llo\n");
  const out = got.filter(([k]) => k === "out").map(([, t]) => t);
  const err = got.filter(([k]) => k === "err").map(([, t]) => t);
  assert.equal(out.join(""), r.stdout);
  assert.ok(!out.some((t) => t.includes("\ufffd")), JSON.stringify(got));
  assert.ok(out.length >= 3, JSON.stringify(got)); // three writes, apart in time
  assert.equal(err.join(""), "second\n");
  assert.equal(r.stderr, "second\n");
  // "first" came a second and more before the command ended.
  const first = got.find(([k]) => k === "out")[2];
  assert.ok(first < done - 1000, JSON.stringify({ got, done }));
  // The same command's record, as any other.
  const last = (await s.execs()).at(-1);
  assert.deepEqual([last.exec_id, last.state, last.status], [r.execId, "done", "ok"]);
  // Only one callback: the other stream is in the result alone.
  const only = [];
  const r2 = await s.exec("echo o; echo e >&2; exit 4", { onStderr: (t) => only.push(t) });
  assert.deepEqual(
    [r2.status, r2.exitCode, r2.stdout, r2.stderr, only.join("")],
    ["nonzero_exit", 4, "o\n", "e\n", "e\n"],
  );
  await s.kill();
});

check("streamed exec: a flood streams no more than the cap", async () => {
  const s = await sbx();
  let n = 0;
  const r = await s.exec("yes | head -c 5000000", { maxOutputBytes: 100_000, onStdout: (t) => (n += t.length) });
  assert.equal(r.status, "ok");
  assert.equal(r.stdoutTruncated, true);
  assert.equal(n, 100_000);
  assert.equal(r.stdout.length, 100_000);
  assert.equal(r.stdoutBytes, 5_000_000);
  assert.equal(r.stderrTruncated, false);
  await s.kill();
});

/**
 * A TCP proxy on loopback that cuts a connection after `idleMs` with no
 * byte either way, as load balancers and reverse proxies do. `cuts` counts
 * the connections cut in the middle of an answer (a request sent and no
 * answer yet, or a chunked answer not at its end); `idleCuts` those cut
 * between requests (fetch keeps connections for the next request).
 */
async function idleProxy(upstream, idleMs) {
  const { hostname, port } = new URL(upstream);
  const proxy = { cuts: 0, idleCuts: 0, url: "" };
  const conns = new Set();
  const server = net.createServer((c) => {
    const u = net.connect(Number(port), hostname);
    conns.add(c).add(u);
    let timer = null;
    let waiting = false; // a request sent, no byte of its answer yet
    let chunked = false; // a chunked answer not at its end
    let tail = "";
    const end = () => {
      clearTimeout(timer);
      c.destroy();
      u.destroy();
      conns.delete(c);
      conns.delete(u);
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (waiting || chunked) proxy.cuts++;
        else proxy.idleCuts++;
        end();
      }, idleMs);
    };
    arm();
    c.on("data", (data) => {
      arm();
      waiting = true;
      u.write(data);
    });
    u.on("data", (data) => {
      arm();
      waiting = false;
      const text = data.toString("latin1");
      if (/\r\ntransfer-encoding: *chunked\r\n/i.test(text)) chunked = true;
      tail = (tail + text).slice(-5);
      if (tail === "0\r\n\r\n") chunked = false;
      c.write(data);
    });
    for (const x of [c, u]) {
      x.on("end", end);
      x.on("error", end);
      x.on("close", end);
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  proxy.url = `http://127.0.0.1:${server.address().port}`;
  proxy.close = () => {
    for (const x of conns) x.destroy();
    return new Promise((r) => server.close(r));
  };
  return proxy;
}

check("streamed exec: a quiet stream outlives an idle proxy", async () => {
  const proxy = await idleProxy(url, 1000);
  try {
    const s = await sbx();
    const far = await Sandbox.connect(s.id, { server: proxy.url, token: tokens.cs101 });
    const seen = [];
    let r = await far.exec("sleep 3; echo done", { onStdout: (t) => seen.push(t), keepaliveMs: 300 });
    assert.deepEqual([r.status, r.stdout, seen.join("")], ["ok", "done\n", "done\n"]);
    assert.equal(proxy.cuts, 0);
    // keepaliveMs alone streams too: the same result, with no callbacks.
    r = await far.exec("sleep 3; echo quiet", { keepaliveMs: 300 });
    assert.deepEqual([r.status, r.stdout], ["ok", "quiet\n"]);
    assert.equal(proxy.cuts, 0);
    // A stream with the default keepalive (15 s) is cut as well...
    await assert.rejects(far.exec("sleep 3; echo done", { onStdout: () => {} }), ConnectionFailed);
    assert.equal(proxy.cuts, 1);
    // ...and without a stream the same wait is too.
    await assert.rejects(far.exec("sleep 3; echo done"), ConnectionFailed);
    assert.equal(proxy.cuts, 2);
    // ...and those commands still ran to their end, on record.
    const deadline = Date.now() + 20_000;
    let last;
    while (Date.now() < deadline) {
      last = (await s.execs()).at(-1);
      if (last.state === "done") break;
      await sleep(300);
    }
    assert.deepEqual([last.state, last.status], ["done", "ok"]);
    await s.kill();
  } finally {
    await proxy.close();
  }
});

check("streamed exec: a sandbox deleted mid-stream rejects with NotFound, saying so", async () => {
  const s = await sbx();
  let killing = null;
  const t0 = Date.now();
  await assert.rejects(
    s.exec("echo up; sleep 30", {
      // Killed from a second client once the command is seen running.
      onStdout: () => {
        killing ??= Sandbox.connect(s.id, cs101).then((again) => again.kill());
      },
    }),
    (err) => {
      assert.ok(err instanceof NotFound, String(err));
      assert.equal(err.code, "not_found");
      assert.equal(err.status, 404);
      assert.match(err.message, /deleted/);
      return true;
    },
  );
  assert.ok(killing, "the command's output came");
  await killing;
  assert.ok(Date.now() - t0 < 20_000);
  assert.equal((await s.getInfo()).state, "deleted");
});

check("streamed exec: a refusal before the command starts is an ordinary error", async () => {
  const s = await sbx();
  const onStdout = () => assert.fail("no output of a refused command");
  for (const keepaliveMs of [50, 60_001]) {
    await assert.rejects(s.exec(["true"], { onStdout, keepaliveMs }), (err) => {
      assert.ok(err instanceof InvalidInput, String(err));
      assert.equal(err.status, 422);
      assert.match(err.message, /keepalive_ms/);
      return true;
    });
  }
  await assert.rejects(s.exec(["true"], { onStdout, timeoutMs: 0 }), InvalidInput);
  await assert.rejects(s.exec(["true"], { onStdout: "print" }), TypeError);
  await assert.rejects(s.exec(["true"], { on_stdout: onStdout }), TypeError);
  // A callback's own error rejects the exec as it is; the command runs on.
  const boom = new Error("callback failed");
  await assert.rejects(
    s.exec("echo one; sleep 1; echo two > /work/after.txt", {
      onStdout: () => {
        throw boom;
      },
    }),
    (err) => err === boom,
  );
  const deadline = Date.now() + 20_000;
  while (!(await s.files.exists("/work/after.txt")) && Date.now() < deadline) await sleep(200);
  assert.equal(await s.files.readText("/work/after.txt"), "two\n");
  await s.kill();
  await assert.rejects(s.exec(["true"], { onStdout }), (err) => err instanceof NotFound && err.status === 404);
});

/** A server of our own: handler(body, res) answers each request. */
async function fakeStream(handler) {
  const fake = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    await handler(JSON.parse(Buffer.concat(chunks).toString() || "null"), res);
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  return fake;
}

check("streamed exec: lines cut anywhere, error lines by their code, a stream cut short", async () => {
  let answer; // what the fake server sends: bytes, written one at a time
  let type = "application/x-ndjson";
  const bodies = [];
  const fake = await fakeStream(async (body, res) => {
    if (body === null) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ id: 7, state: "running" }));
      return;
    }
    bodies.push(body);
    res.writeHead(200, { "Content-Type": type });
    for (const b of answer) {
      res.write(Buffer.from([b]));
      await sleep(0);
    }
    res.end();
  });
  try {
    const s = await Sandbox.connect(7, { server: `http://127.0.0.1:${fake.address().port}`, token: "prt_x" });
    const b64 = (bytes) => Buffer.from(bytes).toString("base64");
    const nd = (...docs) => Buffer.from(docs.map((d) => JSON.stringify(d) + "\n").join(""));
    // "é" split between two lines; "€" (3 bytes) split across three; a
    // blank line and a keepalive between; a message in UTF-8.
    const euro = Buffer.from("€");
    const result = { status: "ok", exit_code: 0, stdout: "hé€!", stderr: "", stdout_bytes: 7, exec_id: 3 };
    answer = nd(
      { type: "started", exec_id: 3, sandbox_id: 7 },
      { type: "stdout", data_base64: b64([0x68, 0xc3]) },
      { type: "keepalive" },
      { type: "stdout", data_base64: b64([0xa9, euro[0]]) },
      { type: "stderr", data_base64: b64(Buffer.from("ünï")) },
      { type: "stdout", data_base64: b64([euro[1]]) },
      { type: "stdout", data_base64: b64([euro[2], 0x21]) },
      { type: "result", result },
    );
    const nl = answer.indexOf("\n") + 1;
    answer = Buffer.concat([answer.subarray(0, nl), Buffer.from("\n"), answer.subarray(nl)]);
    const out = [];
    const err = [];
    const r = await s.exec(["x"], {
      keepaliveMs: 100,
      onStdout: async (t) => {
        await sleep(5); // awaited: the next piece waits for it
        out.push(t);
      },
      onStderr: (t) => err.push(t),
    });
    assert.deepEqual(bodies.at(-1), { timeout_ms: 60_000, argv: ["x"], stream: true, keepalive_ms: 100 });
    assert.deepEqual(out, ["h", "é", "€!"]);
    assert.deepEqual(err, ["ünï"]);
    assert.deepEqual([r.status, r.stdout, r.stdoutBytes, r.execId], ["ok", "hé€!", 7, 3]);
    // A character cut by the output's end is flushed (as U+FFFD) before the result.
    answer = nd({ type: "stdout", data_base64: b64([0x61, 0xc3]) }, { type: "result", result });
    out.length = 0;
    await s.exec(["x"], { onStdout: (t) => out.push(t) });
    assert.deepEqual(out, ["a", "\ufffd"]);
    // An error line: the class and the status of its code.
    const cases = [
      ["not_found", "sandbox 7 was deleted while the command ran ✓", NotFound, 404],
      ["unavailable", "the server is stopping", Unavailable, 503],
      ["something_new", "a code this client does not know", ProctorError, 0],
    ];
    for (const [code, message, Cls, status] of cases) {
      answer = nd({ type: "started", exec_id: 4, sandbox_id: 7 }, { type: "error", error: { code, message } });
      await assert.rejects(s.exec(["x"], { onStdout: () => {} }), (e) => {
        assert.ok(e instanceof Cls && e.constructor === Cls, `${code}: ${e}`);
        assert.deepEqual([e.code, e.message, e.status], [code, message, status]);
        return true;
      });
    }
    // Cut short: with no last line, or in the middle of one.
    for (const cut of [
      nd({ type: "started", exec_id: 5 }),
      nd({ type: "started" }, { type: "result", result }).subarray(0, 40),
    ]) {
      answer = cut;
      await assert.rejects(s.exec(["x"], { onStdout: () => {} }), (e) => {
        assert.ok(e instanceof ConnectionFailed, String(e));
        assert.match(e.message, /stream ended/);
        return true;
      });
    }
    // Not JSON.
    answer = Buffer.from('{"type":"started"}\nnot json\n');
    await assert.rejects(s.exec(["x"], { onStdout: () => {} }), { code: "bad_stream" });
    // Not a stream at all (a server, or a proxy, that answered one document).
    type = "application/json";
    answer = Buffer.from(JSON.stringify(result));
    await assert.rejects(s.exec(["x"], { onStdout: () => {} }), (e) => {
      assert.equal(e.code, "bad_stream");
      assert.match(e.message, /not a stream of JSON lines \(application\/json\)/);
      return true;
    });
  } finally {
    fake.closeAllConnections?.();
    await new Promise((r) => fake.close(r));
  }
});

// ---- templates: a prepared sandbox kept as name@N ----

check("snapshot twice, create from a pin and from the name, remove", async () => {
  const other = { server: url, token: tokens.other };
  const s = await sbx();
  await s.files.write("/workspace/tests/test_hidden.py", "assert True\n");
  await s.files.write("/work/run.sh", "#!/bin/sh\necho prepared\n", { executable: true });
  await s.exec(
    "mkdir -p /work/cache && echo built > /work/cache/out.txt && " +
      "ln -s /etc/passwd /work/cache/link && mkfifo /work/cache/fifo",
  );
  const t1 = await s.snapshot("hw3");
  assert.deepEqual([t1.name, t1.version, t1.template], ["hw3", 1, "hw3@1"]);
  assert.equal(t1.source_sandbox_id, s.id);
  assert.match(t1.digest, /^[0-9a-f]{64}$/);
  assert.ok(t1.bytes > 0 && t1.id > 0 && t1.created_ms > 0, JSON.stringify(t1));
  await s.files.write("/work/later.txt", "later");
  const t2 = await s.snapshot("hw3");
  assert.equal(t2.template, "hw3@2");
  assert.notEqual(t1.digest, t2.digest);
  assert.equal(s.info.template ?? null, null);
  await s.kill();

  const a = await sbx({ template: "hw3@1" });
  assert.equal(a.info.template, "hw3@1");
  assert.equal((await a.exec(["/work/run.sh"])).stdout, "prepared\n");
  assert.equal(await a.files.readText("/work/cache/out.txt"), "built\n");
  assert.equal(await a.files.exists("/workspace/tests/test_hidden.py"), true);
  assert.equal(await a.files.exists("/work/later.txt"), false);
  // Links and special files are not kept.
  assert.equal(await a.files.exists("/work/cache/link"), false);
  assert.equal(await a.files.exists("/work/cache/fifo"), false);
  // Its files are the program's to change.
  const r = await a.exec("echo x >> /work/cache/out.txt && echo y > /workspace/tests/new.txt");
  assert.equal(r.status, "ok", JSON.stringify(r));
  await a.kill();

  const b = await sbx({ template: "hw3" }); // the latest
  assert.equal(b.info.template, "hw3@2");
  assert.equal((await b.getInfo()).template, "hw3@2");
  assert.equal(await b.files.readText("/work/later.txt"), "later");
  await b.kill();

  const listed = await Templates.list(cs101);
  assert.ok(
    ["hw3@1", "hw3@2"].every((p) => listed.some((t) => t.template === p)),
    JSON.stringify(listed),
  );
  assert.deepEqual(await Templates.get(t1.id, cs101), t1);
  assert.deepEqual(await Templates.get(t2, cs101), t2); // a document stands for its id
  // Another course sees none of them, and cannot start from them.
  assert.ok(!(await Templates.list(other)).some((t) => t.name === "hw3"));
  await assert.rejects(Templates.get(t1.id, other), NotFound);
  await assert.rejects(Templates.remove(t1.id, other), NotFound);
  await assert.rejects(sbx({ ...other, template: "hw3@1" }), NotFound);
  await assert.rejects(sbx({ ...other, template: "hw3" }), NotFound);

  const removed = await Templates.remove(t1.id, cs101);
  assert.deepEqual([removed.template, removed.removed], ["hw3@1", true]);
  await assert.rejects(sbx({ template: "hw3@1" }), NotFound);
  await assert.rejects(Templates.get(t1.id, cs101), NotFound);
  await assert.rejects(Templates.remove(t1.id, cs101), NotFound);
  assert.ok(!(await Templates.list(cs101)).some((t) => t.template === "hw3@1"));
  // A removed version is never given again.
  const s2 = await sbx();
  assert.equal((await s2.snapshot("hw3")).version, 3);
  await s2.kill();
  // Still from the name: the latest not removed.
  const c = await sbx({ template: "hw3" });
  assert.equal(c.info.template, "hw3@3");
  await c.kill();
});

check("templates: malformed pins and names are InvalidInput, unknown ones NotFound", async () => {
  for (const bad of ["Bad Name", "../x", "a@0", "hw3@x", "@1", "x@", "a@-1"]) {
    await assert.rejects(sbx({ template: bad }), (err) => {
      assert.ok(err instanceof InvalidInput, `${bad}: ${err}`);
      assert.equal(err.status, 422);
      return true;
    });
  }
  await assert.rejects(sbx({ template: "never-made" }), NotFound);
  await assert.rejects(sbx({ template: "never-made@1" }), NotFound);
  const s = await sbx();
  for (const bad of ["Bad Name", "", "../x", "a@1", "-x"]) {
    await assert.rejects(s.snapshot(bad), InvalidInput, bad);
  }
  await s.kill();
  await assert.rejects(s.snapshot("late"), NotFound); // an ended sandbox
  await assert.rejects(Templates.get("nope", cs101), TypeError);
  await assert.rejects(Templates.remove(999999, cs101), NotFound);
  await assert.rejects(Templates.list({ ...cs101, course: "x" }), TypeError);
});

// ---- the end: nothing left running, serve stops cleanly, the closing line ----

after(() => S.finish(counts));
