// Room and money for sandboxes (issue 24) through the JavaScript client
// (clients/js), against a real `proctor serve --slots 2` holding real jail
// sandboxes, on a SQLite store in a temporary directory: creates waiting in
// line for a slot (waitForCapacityMs), fair between courses; a token's live
// maximum and daily spending limit; a sandbox's maxCostMicros. The cases of
// test_python_capacity.py, through this client.
//
// Run by meson (tests/meson.build) with PROCTOR set to the built proctor;
// imports the client from the source tree; needs root (sandboxes), else
// exits 77 (skipped). Node's test runner reports each test; the last line is
// "N passed, N failed". PROCTOR_TEST_ONLY=REGEX runs only the tests it names.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, test } from "node:test";

import { Server, closingLine } from "./proctorserve.mjs";

import {
  BudgetExceeded,
  Capacity,
  Forbidden,
  InvalidInput,
  NotFound,
  ProctorError,
  Sandbox,
  Unauthorized,
} from "../../clients/js/src/index.js";

const PROCTOR = process.env.PROCTOR || "proctor";
const SLOTS = 2;

if (process.getuid() !== 0) {
  console.error("test_js_capacity: needs root (sandboxes)");
  process.exit(77);
}

// Counted for the closing line; node's runner reports each test too.
const counts = closingLine();

// ---- the server: proctor serve --workers 0 --slots 2 on a fresh store ----

const S = new Server(PROCTOR, { prefix: "proctor-jscap.", slots: SLOTS, courses: ["cs101", "other"] });
const { db, tokens } = S;
const url = await S.ready();
const token = (course, scope) => S.token(course, scope);

counts.failed = 0;

// ---- helpers ----

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

const made = []; // every sandbox a test made, killed at the end if a test did not
let pending = []; // the creates a test started in the background

/**
 * A sandbox of `course` (or of `token`); one that finds no room waits for
 * it (a killed sandbox's slot frees when its keeper has exited) unless
 * given `waitForCapacityMs: undefined`.
 */
async function sbx({ course = "cs101", token: tok, ...opts } = {}) {
  const s = await Sandbox.create({
    memoryMiB: 64,
    waitForCapacityMs: 30_000,
    ...opts,
    server: url,
    token: tok ?? tokens[course],
  });
  made.push(s);
  return s;
}

/** `fn()` run in the background: the object gets `value` or `error`,
 * `seconds`, and `done`, a promise that never rejects. */
function background(fn) {
  const out = { settled: false };
  const t0 = performance.now();
  out.done = (async () => {
    try {
      out.value = await fn();
    } catch (err) {
      out.error = err;
    }
    out.seconds = (performance.now() - t0) / 1000;
    out.settled = true;
  })();
  pending.push(out.done);
  return out;
}

/** `cond()` (maybe async) true within `seconds`, looked at every 50 ms. */
async function until(cond, seconds = 20) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await sleep(50);
  }
  return false;
}

async function metric(name) {
  const res = await fetch(url + "/metrics", { signal: AbortSignal.timeout(30_000) });
  assert.equal(res.status, 200);
  for (const line of (await res.text()).split("\n")) {
    if (line.startsWith(name + " ")) return Number(line.split(/\s+/)[1]);
  }
  return 0;
}

const waitingNow = () => metric("proctor_sandbox_capacity_waiting");

// The token routes have no helper in the client: the HTTP API, with the
// client's error classes by the server's code.
const ERRORS = {
  not_found: NotFound,
  invalid_input: InvalidInput,
  invalid_request: InvalidInput,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  capacity: Capacity,
  budget_exceeded: BudgetExceeded,
};

async function api(tok, method, route, body) {
  const res = await fetch(url + route, {
    method,
    headers: {
      Authorization: `Bearer ${tok}`,
      Accept: "application/json",
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let doc = null;
  try {
    doc = text ? JSON.parse(text) : null;
  } catch {
    // checked below
  }
  if (!res.ok) {
    const code = doc?.error?.code ?? "unknown";
    const Cls = ERRORS[code] ?? ProctorError;
    throw new Cls(res.status, code, doc?.error?.message ?? text);
  }
  assert.ok(doc !== null, `${method} ${route}: not JSON: ${text}`);
  return doc;
}

const admins = {};

function admin(course = "cs101") {
  admins[course] ??= token(course, "admin");
  return (method, route, body) => api(admins[course], method, route, body);
}

/** A new instructor token of `course` with limits, made by its admin. */
function mint(limits, course = "cs101") {
  return admin(course)("POST", "/v1/tokens", { scope: "instructor", ...limits });
}

/** Both slots held by sandboxes of course cs101 (killed by the test's end if not before). */
async function holding() {
  const held = [];
  for (let i = 0; i < SLOTS; i++) held.push(await sbx());
  return held;
}

async function killAll(list) {
  for (const s of list) await s.kill();
}

// PROCTOR_TEST_ONLY=REGEX runs only the tests whose names match (the others
// are reported skipped), as node's --test-name-pattern would.
const only = process.env.PROCTOR_TEST_ONLY ? new RegExp(process.env.PROCTOR_TEST_ONLY) : null;

// Each test's sandboxes are killed when it ends, passed or not, and its
// background creates awaited (each waits a bounded time), so that one
// failure does not hold the slots the next test needs.
function check(name, fn) {
  if (only && !only.test(name)) {
    test(name, { skip: "not in PROCTOR_TEST_ONLY" }, () => {});
    return;
  }
  test(name, async (t) => {
    const first = made.length;
    pending = [];
    try {
      await fn(t);
      counts.passed++;
    } catch (err) {
      counts.failed++;
      throw err;
    } finally {
      // The sandboxes first (a create still waiting gets their slots), then
      // those the waiting creates made.
      const killMade = async () => {
        for (const s of made.slice(first)) {
          if (s.info.state === "running") await s.kill().catch(() => {});
        }
      };
      await killMade();
      await Promise.all(pending);
      await killMade();
    }
  });
}

/** assert.rejects with the error kept, for the assertions after. */
async function rejection(promise, Cls) {
  let caught = null;
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Cls, `${Cls.name} expected, got ${err?.stack ?? err}`);
    caught = err;
    return true;
  });
  return caught;
}

// ---- room ----

check("more creates than slots all finish, waiting in line", async () => {
  const waitsBefore = await metric("proctor_sandbox_capacity_waits_total");
  const one = async (i) => {
    const t0 = performance.now();
    const s = await sbx({ waitForCapacityMs: 60_000, labels: { n: String(i) } });
    const waited = (performance.now() - t0) / 1000;
    try {
      const r = await s.exec(["sh", "-c", `sleep 0.5; echo ${i}`]);
      return { id: s.id, out: r.stdout, waited };
    } finally {
      await s.kill();
    }
  };
  const t0 = performance.now();
  const runs = Array.from({ length: 6 }, (_, i) => background(() => one(i)));
  await Promise.all(runs.map((r) => r.done));
  const total = (performance.now() - t0) / 1000;
  assert.deepEqual(
    runs.filter((r) => r.error).map((r) => String(r.error)),
    [],
  );
  assert.deepEqual(
    runs.map((r) => r.value.out).sort(),
    Array.from({ length: 6 }, (_, i) => `${i}\n`),
  );
  assert.equal(new Set(runs.map((r) => r.value.id)).size, 6);
  const waited = runs.map((r) => r.value.waited).sort((a, b) => a - b);
  console.error(
    `6 creates on ${SLOTS} slots: ${total.toFixed(2)} s in all, waits ${waited.map((w) => w.toFixed(2)).join(", ")}`,
  );
  // Three rounds of a half-second command: the last waits about two.
  assert.ok(waited.at(-1) < 20, String(waited));
  assert.ok(total < 30, String(total));
  assert.ok((await metric("proctor_sandbox_capacity_waits_total")) - waitsBefore >= 1);
  assert.equal(await waitingNow(), 0);
});

check("without waiting a full host is 429 Capacity with retryAfter", async () => {
  const held = await holding();
  const t0 = performance.now();
  const err = await rejection(sbx({ waitForCapacityMs: undefined }), Capacity);
  assert.ok(performance.now() - t0 < 5000);
  assert.deepEqual([err.status, err.code], [429, "capacity"]);
  assert.ok(err.retryAfter > 0, String(err.retryAfter));
  assert.match(err.message, new RegExp(`${SLOTS} slots, every one taken`));
  assert.match(err.message, /wait_for_capacity_ms/);
  await killAll(held);
});

check("a wait that runs out is Capacity saying so", async () => {
  const held = await holding();
  const t0 = performance.now();
  const err = await rejection(sbx({ waitForCapacityMs: 1500 }), Capacity);
  const took = (performance.now() - t0) / 1000;
  assert.ok(took >= 1.4 && took < 6, String(took));
  assert.equal(err.status, 429);
  assert.ok(err.message.includes("within wait_for_capacity_ms (1500 ms)"), err.message);
  assert.ok(err.retryAfter > 0, String(err.retryAfter));
  await killAll(held);
  assert.equal(await waitingNow(), 0);
});

check("a waiter gets the slot that frees", async () => {
  const held = await holding();
  const w = background(() => sbx({ waitForCapacityMs: 30_000 }));
  assert.ok(await until(async () => (await waitingNow()) === 1));
  await sleep(500);
  assert.equal(w.settled, false);
  await held[0].kill();
  await w.done;
  assert.equal(w.error, undefined, String(w.error));
  await w.value.kill();
  assert.ok(w.seconds < 10, String(w.seconds));
  await held[1].kill();
});

check("courses take turns in the line", async () => {
  // Three creates of cs101 wait, then three of other: with one slot freed,
  // the grants alternate, each course in its own order.
  const order = [];
  const one = async (course, n) => {
    const s = await sbx({ course, waitForCapacityMs: 60_000 });
    order.push(`${course}${n}`);
    await s.kill();
  };
  const held = await holding();
  const runs = [];
  for (const course of ["cs101", "other"]) {
    for (let n = 0; n < 3; n++) {
      runs.push(background(() => one(course, n)));
      // Their order of arrival is the order asserted.
      assert.ok(await until(async () => (await waitingNow()) === runs.length));
    }
  }
  await held[0].kill(); // one slot: the grants come one at a time
  await Promise.all(runs.map((r) => r.done));
  assert.deepEqual(
    runs.filter((r) => r.error).map((r) => String(r.error)),
    [],
  );
  await held[1].kill();
  assert.deepEqual(order, ["cs1010", "other0", "cs1011", "other1", "cs1012", "other2"]);
});

check("a token at its live maximum waits or is refused", async () => {
  const t = await mint({ max_live_sandboxes: 1 });
  assert.equal(t.max_live_sandboxes, 1);
  const first = await sbx({ token: t.token });
  let w;
  try {
    const err = await rejection(sbx({ token: t.token, waitForCapacityMs: undefined }), Capacity);
    assert.ok(err.message.includes("max_live_sandboxes (1)"), err.message);
    // Another token of the course is not held up by this one's.
    await (await sbx()).kill();
    w = background(() => sbx({ token: t.token, waitForCapacityMs: 30_000 }));
    assert.ok(await until(async () => (await waitingNow()) === 1));
    await sleep(500);
    assert.equal(w.settled, false);
  } finally {
    await first.kill();
  }
  await w.done;
  assert.equal(w.error, undefined, String(w.error));
  await w.value.kill();
  // A token allowed none waits for nothing.
  const none = await mint({ max_live_sandboxes: 0 });
  await rejection(sbx({ token: none.token, waitForCapacityMs: 300 }), Capacity);
});

// ---- money ----

check("info reports usage and cost so far", async () => {
  const s = await sbx({ memoryMiB: 1024 });
  await s.exec(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]);
  await sleep(1000);
  const info = await s.getInfo();
  const u = info.usage;
  assert.equal(info.max_cost_micros, null);
  assert.ok(u.cpu_seconds > 0, JSON.stringify(u));
  assert.ok(u.reserved_gib_seconds > 1, JSON.stringify(u));
  // $0.0504 a vCPU-hour and $0.0162 a GiB-hour (serve's defaults).
  const want = ((u.cpu_seconds * 0.0504 + u.reserved_gib_seconds * 0.0162) / 3600) * 1e6;
  assert.ok(Math.abs(u.cost_micros - Math.trunc(want)) <= 1, `${u.cost_micros} vs ${want}`);
  // The cost grows while it lives (4.5 micro-dollars a second at 1 GiB).
  await sleep(500);
  const later = await s.costMicros();
  assert.equal(typeof later, "number");
  assert.ok(later > u.cost_micros, `${later} after ${u.cost_micros}`);
  assert.equal(s.info.usage.cost_micros, later);
  await s.kill();
});

check("maxCostMicros ends the sandbox and cuts its command short", async () => {
  // 1 GiB costs 4.5 micro-dollars a second: 10 are reached in about 2 s.
  const s = await sbx({ memoryMiB: 1024, maxCostMicros: 10 });
  assert.equal(s.info.max_cost_micros, 10);
  assert.equal((await s.getInfo()).max_cost_micros, 10);
  const t0 = performance.now();
  const err = await rejection(s.exec(["sleep", "60"], { timeoutMs: 90_000 }), NotFound);
  const took = (performance.now() - t0) / 1000;
  console.error(`max_cost_micros 10: the command was cut after ${took.toFixed(2)} s`);
  assert.ok(took < 15, String(took));
  assert.equal(err.status, 404);
  assert.ok(err.message.includes("expired while the command ran"), err.message);
  assert.ok(err.message.includes("max_cost_micros"), err.message); // and why
  const info = await s.getInfo();
  assert.equal(info.state, "expired");
  assert.ok(info.end_reason.includes("max_cost_micros"), info.end_reason);
  assert.ok(info.usage.cost_micros >= 10, JSON.stringify(info.usage));
  assert.equal((await s.execs()).at(-1).state, "done");
  assert.ok((await metric("proctor_sandboxes_ended_over_cost_total")) >= 1);
  // Ended: a command now is NotFound at once.
  await rejection(s.exec(["true"]), NotFound);
});

check("maxCostMicros cuts a streamed command short the same way", async () => {
  const s = await sbx({ memoryMiB: 1024, maxCostMicros: 10 });
  const seen = [];
  const t0 = performance.now();
  const err = await rejection(
    s.exec(["sh", "-c", "echo started; sleep 60"], { timeoutMs: 90_000, onStdout: (x) => seen.push(x) }),
    NotFound,
  );
  const took = (performance.now() - t0) / 1000;
  console.error(`max_cost_micros 10, streamed: the command was cut after ${took.toFixed(2)} s`);
  assert.ok(took < 15, String(took));
  assert.equal(seen.join(""), "started\n");
  assert.deepEqual([err.status, err.code], [404, "not_found"]);
  assert.ok(err.message.includes("expired while the command ran"), err.message);
  assert.ok(err.message.includes("max_cost_micros"), err.message);
  assert.equal((await s.getInfo()).state, "expired");
});

check("a token past its daily spend is refused with BudgetExceeded", async () => {
  const t = await mint({ daily_spend_micros: 5 });
  assert.equal(t.daily_spend_micros, 5);
  const s = await sbx({ token: t.token, memoryMiB: 2048 });
  await sleep(1500); // 2 GiB: 9 micro-dollars a second
  // Its live sandbox's reserved memory counts as it goes: a command in it
  // is refused too, not only the next create; streamed or not.
  let err = await rejection(s.exec(["true"]), BudgetExceeded);
  assert.deepEqual([err.status, err.code], [403, "budget_exceeded"]);
  err = await rejection(s.exec(["true"], { onStdout: () => {} }), BudgetExceeded);
  assert.deepEqual([err.status, err.code], [403, "budget_exceeded"]);
  await s.kill();
  err = await rejection(sbx({ token: t.token, waitForCapacityMs: 1000 }), BudgetExceeded);
  assert.deepEqual([err.status, err.code], [403, "budget_exceeded"]);
  assert.ok(err.message.includes("daily_spend_micros 5"), err.message);
  // The course's other tokens spend on.
  await (await sbx()).kill();
  const zero = await mint({ daily_spend_micros: 0 });
  await rejection(sbx({ token: zero.token, waitForCapacityMs: undefined }), BudgetExceeded);
});

// ---- token limits ----

check("only an admin sets token limits", async () => {
  const instructor = (method, route, body) => api(tokens.cs101, method, route, body);
  await rejection(instructor("POST", "/v1/tokens", { scope: "instructor", max_live_sandboxes: 9 }), Forbidden);
  const t = await mint({ daily_spend_micros: 1000, max_live_sandboxes: 3 });
  assert.deepEqual([t.daily_spend_micros, t.max_live_sandboxes, t.scope, t.course], [1000, 3, "instructor", "cs101"]);
  await rejection(instructor("PUT", `/v1/tokens/${t.token_id}`, { max_live_sandboxes: 9 }), Forbidden);
  // The limited token is an instructor's: it cannot lift its own.
  await rejection(api(t.token, "PUT", `/v1/tokens/${t.token_id}`, {}), Forbidden);
  const row = await admin()("PUT", `/v1/tokens/${t.token_id}`, { max_live_sandboxes: 5 });
  assert.deepEqual([row.daily_spend_micros, row.max_live_sandboxes], [null, 5]);
  const listed = (await admin()("GET", "/v1/tokens")).tokens.find((x) => x.token_id === t.token_id);
  assert.equal(listed.max_live_sandboxes, 5);
  assert.equal(listed.daily_spend_micros, null);
  // Another course's admin does not find it.
  await rejection(admin("other")("PUT", `/v1/tokens/${t.token_id}`, {}), NotFound);
});

check("bad limits and create members name the field and its bound", async () => {
  for (const [body, words] of [
    [{ scope: "instructor", daily_spend_micros: -1 }, "daily_spend_micros"],
    [{ scope: "instructor", max_live_sandboxes: 100001 }, "100000"],
    [{ scope: "instructor", max_live_sandboxes: "2" }, "max_live_sandboxes"],
  ]) {
    const err = await rejection(admin()("POST", "/v1/tokens", body), InvalidInput);
    assert.ok(err.message.includes(words), `${JSON.stringify(body)}: ${err.message}`);
  }
  for (const [opts, words] of [
    [{ waitForCapacityMs: 600_001 }, "600000"],
    [{ waitForCapacityMs: -1 }, "wait_for_capacity_ms"],
    [{ maxCostMicros: 0 }, "max_cost_micros"],
    [{ maxCostMicros: 1.5 }, "max_cost_micros"],
  ]) {
    const err = await rejection(sbx(opts), InvalidInput);
    assert.ok(err.message.includes(words), `${JSON.stringify(opts)}: ${err.message}`);
  }
});

check("the admin command mints and sets limits", async () => {
  const admin_ = (...args) =>
    spawnSync(PROCTOR, ["admin", "token", "--db", db, "--course", "cs101", ...args], { encoding: "utf8" });
  let r = admin_("--scope", "instructor", "--max-live-sandboxes", "2", "--daily-spend-micros", "none");
  assert.equal(r.status, 0, r.stderr);
  const out = r.stdout.trim();
  let row = (await admin()("GET", "/v1/tokens")).tokens.find((x) => out.startsWith(x.prefix));
  assert.ok(row, out);
  assert.deepEqual([row.max_live_sandboxes, row.daily_spend_micros], [2, null]);
  r = admin_("--set-limits", String(row.token_id), "--daily-spend-micros", "7");
  assert.equal(r.status, 0, r.stderr);
  row = (await admin()("GET", "/v1/tokens")).tokens.find((x) => x.token_id === row.token_id);
  assert.deepEqual([row.max_live_sandboxes, row.daily_spend_micros], [null, 7]);
  r = admin_("--scope", "submit", "--max-live-sandboxes", "-3");
  assert.equal(r.status, 2);
  assert.ok(r.stderr.includes("--max-live-sandboxes"), r.stderr);
});

after(() => S.finish(counts));
