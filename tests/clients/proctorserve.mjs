// A real `proctor serve` for the JavaScript client suites, as proctorserve.py
// is for the Python ones: a fresh SQLite store in a temporary directory, an
// instructor token per course, the server's port read from its log, its
// keepers found as its children, and the suite's closing line.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * The counts of the closing line "N passed, N failed", written when the
 * process exits (after the runner's own report, and after a failed setup's:
 * the setup counts as one failure until the suite sets `failed = 0`).
 */
export function closingLine() {
  const counts = { passed: 0, failed: 1 };
  process.on("exit", () => {
    fs.writeSync(1, `${counts.passed} passed, ${counts.failed} failed\n`);
    if (counts.failed) process.exitCode = 1;
  });
  return counts;
}

export class Server {
  /** `proctor serve --workers 0 --slots SLOTS` on a fresh store in a new
   * directory named with `prefix`, one instructor token per course. */
  constructor(proctor, { prefix, slots, courses = ["cs101"] }) {
    this.proctor = proctor;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    this.db = `sqlite:${this.dir}/service.db`;
    this.errPath = path.join(this.dir, "serve.err");
    this.tokens = Object.fromEntries(courses.map((c) => [c, this.token(c)]));
    this.errFd = fs.openSync(this.errPath, "w");
    this.proc = spawn(
      proctor,
      ["serve", "--listen", "127.0.0.1:0", "--db", this.db, "--workers", "0", "--slots", String(slots)],
      { stdio: ["ignore", "ignore", this.errFd] },
    );
    this.exit = null;
    this.exited = new Promise((resolve) =>
      this.proc.on("exit", (code, signal) => resolve((this.exit = { code, signal }))),
    );
  }

  /** A new token of `course` with `scope`, minted by `proctor admin token`. */
  token(course, scope = "instructor") {
    const out = execFileSync(this.proctor, ["admin", "token", "--db", this.db, "--course", course, "--scope", scope], {
      encoding: "utf8",
    }).trim();
    assert.match(out, /^prt_/);
    return out;
  }

  log() {
    return fs.readFileSync(this.errPath, "utf8");
  }

  /** The server's URL once it listens (within a minute). */
  async ready() {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(this.log());
      if (m) return (this.url = `http://127.0.0.1:${m[1]}`);
      if (this.exit || Date.now() > deadline) throw new Error("proctor serve did not start: " + this.log());
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The pids of serve's children: its sandbox keepers. */
  keepers() {
    const kids = [];
    for (const pid of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      let stat;
      try {
        stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue;
      }
      const fields = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
      if (Number(fields[1]) === this.proc.pid) kids.push(Number(pid));
    }
    return kids;
  }

  /**
   * After the tests: a keeper still running (every sandbox was killed, so
   * its keeper is reaped within seconds) and a server that does not exit 0
   * on SIGTERM are failures, added to counts.failed.  The directory goes
   * when nothing failed, else its logs are kept and said.
   */
  async finish(counts) {
    const deadline = Date.now() + 10_000;
    while (this.keepers().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const left = this.keepers();
    if (left.length) {
      console.log(`keepers left running after the tests: ${left.join(" ")}`);
      counts.failed++;
    }
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 60_000);
    const { code, signal } = await this.exited;
    clearTimeout(timer);
    fs.closeSync(this.errFd);
    if (code !== 0) {
      console.log(`proctor serve exited ${code ?? signal}:\n${this.log()}`);
      counts.failed++;
    }
    if (counts.failed === 0) fs.rmSync(this.dir, { recursive: true, force: true });
    else console.log(`logs kept in ${this.dir}`);
    if (counts.failed) process.exitCode = 1;
  }
}
