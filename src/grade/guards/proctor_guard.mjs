// Proctor's node:test guard (docs/grading.md, "The node and JUnit guards"):
// a test reporter given to `node --test` with --test-reporter from a fresh
// root-owned directory.  It runs in the runner's own process, which never
// imports the tests or the submission (node runs each test file in a child
// process of its own), and is loaded before the first child starts: it then
// reads the one-time key, deletes the key file and takes the two variables
// out of the environment the children inherit.  It records each test's
// outcome as the runner reports it and, only at the normal end of the run,
// writes a JUnit XML summary with its HMAC-SHA256 under the key.  A killed
// runner writes none; a child that exits early (process.exit) reports none
// of the tests it did not run, and a report file it forged is never read.
// What a child writes to its stdout is still the runner's event stream:
// docs/grading.md says what that leaves possible.
import { createHmac } from 'node:crypto';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';

const keyFile = process.env.PROCTOR_GUARD_KEY_FILE ?? '';
const out = process.env.PROCTOR_GUARD_OUT ?? '';
delete process.env.PROCTOR_GUARD_KEY_FILE;
delete process.env.PROCTOR_GUARD_OUT;
let key = null;
try {
  key = readFileSync(keyFile);
  unlinkSync(keyFile);
} catch {
  key = null;
}

const MESSAGE_CAP = 2000;

// XML attribute text: markup escaped, characters XML 1.0 forbids replaced
// (a lone surrogate becomes U+FFFD when encoded).
function escape(value) {
  return String(value ?? '')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '?')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;')
    .replace(/\t/g, '&#9;');
}

function message(details) {
  const error = details?.error;
  if (!error) return '';
  const shown = error.cause instanceof Error ? error.cause : error;
  return String(shown?.message ?? shown).slice(0, MESSAGE_CAP);
}

export default async function* proctorGuard(source) {
  const cases = [];
  const lastNesting = new Map(); // per file: nesting of the last test finished
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const data = event.data;
    const file = data.file ?? '';
    const last = lastNesting.get(file);
    lastNesting.set(file, data.nesting);
    // Tests finish after their subtests: one whose last finished
    // neighbour was nested deeper is a suite, which node's JUnit
    // reporter writes as a <testsuite>, not a <testcase>.
    if ((last !== undefined && last > data.nesting) || data.details?.type === 'suite') continue;
    let status = event.type === 'test:pass' ? 'passed' : 'failed';
    if (data.skip !== undefined || data.todo !== undefined) status = 'skipped';
    cases.push({ name: data.name, status, message: message(data.details) });
  }
  if (!key || key.length === 0 || !out) return;
  let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n<testsuite name="proctor-guard">\n';
  for (const c of cases) {
    xml += `<testcase classname="test" name="${escape(c.name)}"`;
    if (c.status === 'passed') {
      xml += '/>\n';
      continue;
    }
    const tag = c.status === 'skipped' ? 'skipped' : 'failure';
    xml += `><${tag} message="${escape(c.message)}"/></testcase>\n`;
  }
  xml += '</testsuite>\n</testsuites>\n';
  const body = Buffer.from(xml, 'utf8');
  writeFileSync(out, body);
  writeFileSync(`${out}.sig`, createHmac('sha256', key).update(body).digest('hex'));
}
