#!/usr/bin/env node
// A grading loop on Proctor's sandbox API, as users of hosted sandbox SDKs write them: JavaScript.
//
// For each submission of examples/python-pytest: create a sandbox (1 vCPU,
// 512 MiB, no network, a 300 s lease), upload the student's solution.py to
// /workspace/submission and the instructor's hidden tests to /grader (each
// as one tar), byte-compile, run pytest with a JUnit report under a
// timeout, read the report back, score it, kill the sandbox. The class is
// graded with Promise.all over -j workers, one line is printed per student,
// and each verdict is compared with the example's EXPECTED.tsv. The same
// job, flags and output as python_loop.py beside it.
//
//     PROCTOR_SERVER=http://127.0.0.1:8080 PROCTOR_TOKEN=prt_... \
//     node examples/sdk/js_loop.mjs [-j 4]
//
// Exit status: 0 every verdict matches EXPECTED.tsv; 1 some verdict differs
// (or a submission and a row do not pair up); 2 a submission could not be
// graded because of the server or this script (an infrastructure error,
// never a verdict), or a usage error. See README.md beside this file.

import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

// The installed package (`npm install ./clients/js`) if there is one, else
// the client in this source tree, so the example runs from a checkout as it is.
const { Capacity, InvalidInput, NotFound, ProctorError, Sandbox } = await import("proctor-client").catch((err) => {
  if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
  return import(new URL("../../clients/js/src/index.js", import.meta.url));
});

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXAMPLE = path.join(HERE, "..", "python-pytest");

// What examples/python-pytest/assignment.yaml says, restated as a loop's
// author would (only its declared tests and their points are read from it):
// only these files are taken from a submission (a conftest.py or pytest.ini
// a student adds would steer pytest), each at most 64 KiB; its build and
// test steps and their limits.
//
// The hidden tests are pytest functions (pytest.raises, pytest.approx, no
// unittest.TestCase), so `python3 -m unittest discover` would find none of
// them: the test step is pytest, as in python_loop.py.
const SUBMISSION_FILES = ["solution.py"];
const SUBMISSION_MAX_BYTES = 65536;
const SUBMISSION_DIR = "/workspace/submission";
const GRADER_DIR = "/grader";
const REPORT = "/workspace/report.xml";
const BUILD = ["python3", "-m", "py_compile", "solution.py"];
const TEST = [
  "python3",
  "-m",
  "pytest",
  "-q",
  "-p",
  "no:cacheprovider",
  "--junitxml",
  REPORT,
  `${GRADER_DIR}/test_hidden.py`,
];
const OK_EXIT = [0, 1]; // pytest: all passed, some failed; anything else is a crash
const MEMORY_MIB = 512;
const LEASE_SECONDS = 300;
const REPORT_MAX_BYTES = 1 << 20;
const CAPACITY_WAIT_MS = 120_000; // how long a create waits for a free slot in all
const TAIL_LINES = 20; // of a step's output, kept with the verdict

// The server holds each create in its line for a free slot this long
// (waitForCapacityMs: fair, first come first served, courses in turn);
// PROCTOR_WAIT_FOR_CAPACITY_MS changes it, 0 asks for an answer at once.
// A `capacity` that still comes is waited out by its Retry-After below.
const WAIT_FOR_CAPACITY_MS = process.env.PROCTOR_WAIT_FOR_CAPACITY_MS ?? String(CAPACITY_WAIT_MS);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The declared tests and their points, from the assignment's `tests:` list
 * (one `- {name: N, points: P, ...}` per line). */
async function readPoints(assignmentYaml) {
  const text = await fs.readFile(assignmentYaml, "utf8");
  const at = text.indexOf("\ntests:\n");
  const points = new Map();
  if (at >= 0) {
    for (const m of text.slice(at).matchAll(/^\s*-\s*\{name:\s*([^,}]+?)\s*(?:,([^}]*))?\}/gm)) {
      const p = /points:\s*([0-9.]+)/.exec(m[2] ?? "");
      points.set(m[1], p ? Number(p[1]) : 1);
    }
  }
  if (points.size === 0) throw new Error(`${assignmentYaml}: no tests declared`);
  return points;
}

/** EXPECTED.tsv: submission -> [status, passed, total, score, maxScore]. */
async function readExpected(file) {
  const [head, ...lines] = (await fs.readFile(file, "utf8")).split("\n").filter((l) => l !== "");
  const cols = head.split("\t");
  const rows = new Map();
  for (const line of lines) {
    const r = Object.fromEntries(line.split("\t").map((v, i) => [cols[i], v]));
    rows.set(r.submission, [
      r.expected_status,
      Number(r.expected_passed),
      Number(r.expected_total),
      Number(r.expected_score),
      Number(r.max_score),
    ]);
  }
  return rows;
}

/**
 * Sandbox.create, waiting for a free slot when the server answers
 * `capacity` (429 with Retry-After), for at most CAPACITY_WAIT_MS.
 */
async function createSandbox(labels, image) {
  const deadline = Date.now() + CAPACITY_WAIT_MS;
  const options = { image, vcpu: 1, memoryMiB: MEMORY_MIB, network: "none", timeoutSeconds: LEASE_SECONDS, labels };
  if (WAIT_FOR_CAPACITY_MS) options.waitForCapacityMs = Number(WAIT_FOR_CAPACITY_MS);
  for (;;) {
    try {
      return await Sandbox.create(options);
    } catch (err) {
      if (!(err instanceof Capacity)) throw err;
      // Jittered, so that the workers that met a full server do not all come back at once.
      const wait = Math.min(err.retryAfter || 0.5, 2) * (0.5 + Math.random() / 2) * 1000;
      if (Date.now() + wait > deadline) throw err;
      await sleep(wait);
    }
  }
}

// ---- the JUnit report ----

const ENTITIES = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
const NAME = "[A-Za-z_][\\w.:-]*";
const MARKUP = new RegExp(
  `<!--[\\s\\S]*?-->|<!\\[CDATA\\[[\\s\\S]*?\\]\\]>|<\\?[\\s\\S]*?\\?>` +
    `|<\\/(${NAME})\\s*>|<(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"<]*"|'[^'<]*'))*)\\s*(\\/?)>`,
  "y",
);
const ATTRIBUTE = new RegExp(`(${NAME})\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, "g");
const ELEMENTS_MAX = 100_000;
const DEPTH_MAX = 64;

function unescapeXml(text) {
  return text.replace(/&(#x[0-9A-Fa-f]+|#[0-9]+|[a-z]+);|&/g, (all, ref) => {
    if (ref === undefined) throw new Error("a bare '&'");
    if (ref[0] === "#") return String.fromCodePoint(ref[1] === "x" ? parseInt(ref.slice(2), 16) : Number(ref.slice(1)));
    if (!Object.hasOwn(ENTITIES, ref)) throw new Error(`an unknown entity &${ref};`);
    return ENTITIES[ref];
  });
}

/**
 * Test name -> passed, from a JUnit XML report. The report was written in
 * the sandbox, next to the student's code: a DTD (entity expansion) is
 * refused, and so is anything that is not well-formed, deeper than 64
 * elements or longer than 100,000 of them. A test passes when its
 * <testcase> has no <failure>, <error> or <skipped> child; a name seen
 * twice passes only if every copy does.
 */
function parseJunit(text) {
  if (/<!DOCTYPE|<!ENTITY/.test(text)) throw new Error("the report declares a DTD");
  const outcome = new Map();
  const open = []; // element names, outermost first
  const cases = []; // the open <testcase>s: { name, depth, ok }
  let roots = 0;
  let elements = 0;
  for (let i = 0; ; ) {
    const lt = text.indexOf("<", i);
    const between = text.slice(i, lt < 0 ? undefined : lt);
    if (between.trim() !== "") {
      if (open.length === 0) throw new Error("text outside the root element");
      unescapeXml(between);
    }
    if (lt < 0) break;
    MARKUP.lastIndex = lt;
    const m = MARKUP.exec(text);
    if (!m) throw new Error(`not well-formed at byte ${lt}`);
    i = MARKUP.lastIndex;
    const [, closing, opening, attrs, selfClosing] = m;
    if (closing !== undefined) {
      const top = open.pop();
      if (top !== closing)
        throw new Error(top ? `</${closing}> where <${top}> is open` : `</${closing}> closes nothing`);
      const c = cases.at(-1);
      if (c && c.depth === open.length) {
        cases.pop();
        outcome.set(c.name, (outcome.get(c.name) ?? true) && c.ok);
      }
      continue;
    }
    if (opening === undefined) {
      if (m[0].startsWith("<![CDATA[") && open.length === 0) throw new Error("CDATA outside the root element");
      continue; // a comment, CDATA or a processing instruction
    }
    if (++elements > ELEMENTS_MAX) throw new Error(`more than ${ELEMENTS_MAX} elements`);
    if (open.length === 0 && roots++ > 0) throw new Error("a second root element");
    const parent = cases.at(-1);
    if (parent && parent.depth === open.length - 1 && ["failure", "error", "skipped"].includes(opening)) {
      parent.ok = false;
    }
    const attributes = {};
    for (const a of attrs.matchAll(ATTRIBUTE)) attributes[a[1]] = unescapeXml(a[2] ?? a[3]);
    if (opening === "testcase") {
      const c = { name: attributes.name ?? "", depth: open.length, ok: true };
      if (selfClosing) outcome.set(c.name, (outcome.get(c.name) ?? true) && c.ok);
      else cases.push(c);
    }
    if (!selfClosing) {
      open.push(opening);
      if (open.length > DEPTH_MAX) throw new Error(`nested deeper than ${DEPTH_MAX} elements`);
    }
  }
  if (open.length) throw new Error(`<${open.at(-1)}> is never closed`);
  if (roots === 0) throw new Error("no root element");
  return outcome;
}

// ---- one student ----

/** The last TAIL_LINES lines of a step's output, stdout then stderr. */
function tailOf(run) {
  return `${run.stdout}${run.stderr}`.trimEnd().split("\n").slice(-TAIL_LINES).join("\n");
}

/**
 * The files taken from a submission, copied into a fresh directory to be
 * uploaded as it is; or the reason the submission is rejected.
 */
async function intake(studentDir) {
  const stage = await fs.mkdtemp(path.join(os.tmpdir(), "proctor-js-loop."));
  for (const name of SUBMISSION_FILES) {
    const src = path.join(studentDir, name);
    const st = await fs.lstat(src).catch(() => null);
    let why = null;
    if (!st?.isFile()) why = `${name} is missing`;
    else if (st.size > SUBMISSION_MAX_BYTES) why = `${name} is over ${SUBMISSION_MAX_BYTES} bytes`;
    if (why) {
      await fs.rm(stage, { recursive: true, force: true });
      return { rejected: why };
    }
    await fs.copyFile(src, path.join(stage, name));
  }
  return { stage };
}

/**
 * Fill `g` by grading the taken files in the sandbox `sbx`, in the order of
 * docs/result.md: build, test step, report.
 */
async function gradeIn(sbx, stage, a, g) {
  await sbx.files.upload(stage, SUBMISSION_DIR);
  // The instructor's tests in a directory of their own: nothing the
  // student hands in can replace them.
  await sbx.files.upload(a.testsDir, GRADER_DIR);

  const build = await sbx.exec(BUILD, { cwd: SUBMISSION_DIR, timeoutMs: a.timeoutMs });
  g.outputTail = tailOf(build);
  if (build.status === "error") throw new ProctorError(500, "run_error", `build: ${build.message}`);
  if (build.status === "timeout" || build.status === "memory_limit") {
    g.timedOut = build.timedOut;
    [g.status, g.reason] = [build.status, `build: ${build.message}`];
    return;
  }
  if (build.status !== "ok") {
    g.status = "compile_error";
    g.reason = build.stderr.trim().split("\n").at(-1) || build.status;
    return;
  }

  const run = await sbx.exec(TEST, { cwd: SUBMISSION_DIR, timeoutMs: a.timeoutMs });
  g.outputTail = tailOf(run);
  g.timedOut = run.timedOut;
  if (run.status === "error") throw new ProctorError(500, "run_error", `test: ${run.message}`);
  if (run.timedOut || run.status === "timeout" || run.status === "memory_limit") {
    g.status = run.status === "memory_limit" ? "memory_limit" : "timeout";
    g.reason = `pytest: ${run.message || run.limit}`;
    return;
  }
  if (run.signal !== null) {
    [g.status, g.reason] = ["crashed", `pytest killed by signal ${run.signal}`];
    return;
  }
  if (!OK_EXIT.includes(run.exitCode)) {
    [g.status, g.reason] = ["crashed", `pytest exit ${run.exitCode}`];
    return;
  }

  let data;
  try {
    data = await sbx.files.read(REPORT);
  } catch (err) {
    if (err instanceof NotFound) [g.status, g.reason] = ["crashed", "no report"];
    // A symlink or a FIFO planted in its place.
    else if (err instanceof InvalidInput) [g.status, g.reason] = ["crashed", `report unreadable: ${err.message}`];
    else throw err;
    return;
  }
  if (data.length > REPORT_MAX_BYTES) {
    [g.status, g.reason] = ["crashed", `report over ${REPORT_MAX_BYTES} bytes`];
    return;
  }
  let outcome;
  try {
    outcome = parseJunit(new TextDecoder("utf-8", { fatal: true }).decode(data));
  } catch (err) {
    [g.status, g.reason] = ["crashed", `report unusable: ${err.message}`];
    return;
  }
  if (![...a.points.keys()].some((name) => outcome.has(name))) {
    [g.status, g.reason] = ["crashed", "none of the declared tests is in the report"];
    return;
  }
  g.status = "graded";
  for (const [name, pts] of a.points) {
    if (outcome.get(name)) {
      // a declared test missing from the report scores 0
      g.passed++;
      g.score += pts;
    } else {
      g.failedTests.push(name);
    }
  }
}

/**
 * One student, in a sandbox of their own. Any error is the server's or
 * this script's failure: recorded as such, never scored.
 */
async function grade(studentDir, a) {
  const student = path.basename(studentDir);
  const g = {
    student,
    status: "error",
    passed: 0,
    total: a.points.size,
    score: 0,
    maxScore: [...a.points.values()].reduce((x, y) => x + y, 0),
    reason: "",
    failedTests: [],
    timedOut: false,
    outputTail: "",
    seconds: 0,
    infraError: null,
  };
  const t0 = performance.now();
  let stage = null;
  try {
    const taken = await intake(studentDir);
    if (taken.rejected) {
      [g.status, g.reason] = ["rejected", taken.rejected]; // nothing is run
    } else {
      stage = taken.stage;
      const labels = { course: "cs101", assignment: "python-pytest", student };
      const sbx = await createSandbox(labels, a.image);
      try {
        await gradeIn(sbx, stage, a, g);
      } finally {
        // Killed however the grading ended; a refusal here (it ended on
        // its own) is no reason to lose the verdict.
        await sbx.close().catch((err) => {
          if (!(err instanceof ProctorError)) throw err;
        });
      }
    }
  } catch (err) {
    g.infraError =
      err instanceof ProctorError ? `${err.status} ${err.code}: ${err.message}` : String(err?.message ?? err);
  } finally {
    if (stage) await fs.rm(stage, { recursive: true, force: true });
  }
  g.seconds = (performance.now() - t0) / 1000;
  return g;
}

/**
 * fn over every item with at most `limit` running at once, by Promise.all
 * over `limit` workers that take the next item as each finishes; `onDone`
 * is called with the results so far (a hole for each not done) as each ends. Resolves to the results in the items' order.
 */
async function mapBounded(items, limit, fn, onDone) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
      onDone(results);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// ---- the class ----

const num = (x) => String(Number(x.toPrecision(6)));
const usage = `usage: js_loop.mjs [-h] [--example EXAMPLE] [--submissions SUBMISSIONS] [--expected EXPECTED]
                   [-j JOBS] [--image IMAGE] [--timeout-ms TIMEOUT_MS]`;

function usageError(message) {
  process.stderr.write(`${usage}\njs_loop.mjs: error: ${message}\n`);
  process.exit(2);
}

async function main() {
  let args;
  try {
    args = parseArgs({
      options: {
        example: { type: "string", default: EXAMPLE },
        submissions: { type: "string" },
        expected: { type: "string" },
        jobs: { type: "string", short: "j", default: "4" },
        image: { type: "string", default: "host" },
        "timeout-ms": { type: "string", default: "30000" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }).values;
  } catch (err) {
    usageError(err.message);
  }
  if (args.help) {
    process.stdout.write(
      `${usage}\n\nA grading loop on Proctor's sandbox API (see README.md beside this file).\n\n` +
        `  --example DIR        the assignment: its tests/, assignment.yaml (default: ${EXAMPLE})\n` +
        `  --submissions DIR    one directory per student (default: EXAMPLE/submissions)\n` +
        `  --expected FILE      the verdicts to compare with (default: EXAMPLE/EXPECTED.tsv)\n` +
        `  -j, --jobs N         sandboxes at once (default 4)\n` +
        `  --image PIN          the sandbox's image (default: host)\n` +
        `  --timeout-ms MS      each step's wall limit (default 30000)\n` +
        `\nPROCTOR_WAIT_FOR_CAPACITY_MS: how long the server may hold each create for a slot (default 120000; 0: answer at once).\n`,
    );
    return 0;
  }
  const jobs = Number(args.jobs);
  const timeoutMs = Number(args["timeout-ms"]);
  if (!Number.isInteger(jobs) || !Number.isInteger(timeoutMs) || jobs < 1 || timeoutMs < 1) {
    usageError("-j and --timeout-ms must be whole numbers, at least 1");
  }
  if (WAIT_FOR_CAPACITY_MS !== undefined && !/^[0-9]+$/.test(WAIT_FOR_CAPACITY_MS)) {
    usageError(`PROCTOR_WAIT_FOR_CAPACITY_MS: a number of milliseconds, not '${WAIT_FOR_CAPACITY_MS}'`);
  }
  const subs = args.submissions ?? path.join(args.example, "submissions");
  const expected = await readExpected(args.expected ?? path.join(args.example, "EXPECTED.tsv"));
  const a = {
    testsDir: path.join(args.example, "tests"),
    points: await readPoints(path.join(args.example, "assignment.yaml")),
    image: args.image,
    timeoutMs,
  };
  const students = (await fs.readdir(subs, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  if (students.length === 0) usageError(`no submissions in ${subs}`);

  const t0 = performance.now();
  let mismatches = 0;
  let infra = 0;
  console.log(
    `${"student".padEnd(14)} ${"status".padEnd(14)} ${"passed".padStart(6)} ${"score".padStart(7)} ${"secs".padStart(5)}  check`,
  );
  const print = (g) => {
    const secs = g.seconds.toFixed(1).padStart(5);
    if (g.infraError) {
      infra++;
      console.log(
        `${g.student.padEnd(14)} ${"-".padEnd(14)} ${"-".padStart(6)} ${"-".padStart(7)} ${secs}  ` +
          `NOT GRADED (infrastructure, not the student's): ${g.infraError}`,
      );
      return;
    }
    const got = [g.status, g.passed, g.total, g.score, g.maxScore];
    const want = expected.get(g.student);
    let check = "ok";
    if (!want || want.some((v, i) => v !== got[i])) {
      mismatches++;
      check = want
        ? `MISMATCH: expected ${want[0]} ${want[1]}/${want[2]} ${num(want[3])}/${num(want[4])}`
        : "NO EXPECTED ROW";
    }
    const detail = g.reason || g.failedTests.map((t) => `fails ${t}`).join(", ");
    console.log(
      `${g.student.padEnd(14)} ${g.status.padEnd(14)} ${`${g.passed}/${g.total}`.padStart(6)} ` +
        `${`${num(g.score)}/${num(g.maxScore)}`.padStart(7)} ${secs}  ${check}` +
        (detail ? `  (${detail})` : ""),
    );
    // What the student's run said, where the verdict is not the expected one.
    if (check !== "ok" && g.outputTail) console.log(g.outputTail.replace(/^/gm, "    | "));
  };
  // In the students' order, each as soon as it and those before are done.
  let printed = 0;
  await mapBounded(
    students,
    jobs,
    (s) => grade(path.join(subs, s), a),
    (results) => {
      while (printed < results.length && results[printed] !== undefined) print(results[printed++]);
    },
  );
  for (const missing of [...expected.keys()].filter((s) => !students.includes(s)).sort()) {
    mismatches++;
    console.log(`${missing.padEnd(14)} MISSING: EXPECTED.tsv has a row but there is no submission`);
  }
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  console.log(
    `${students.length} graded in ${secs} s with -j ${jobs}: ` +
      `${students.length - mismatches - infra} as expected, ${mismatches} differ, ${infra} not graded`,
  );
  if (infra) return 2;
  return mismatches ? 1 : 0;
}

process.exitCode = await main();
