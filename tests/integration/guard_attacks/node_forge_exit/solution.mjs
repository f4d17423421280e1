// An attack on the node --test guard (tests/integration/test_runner_guards.c):
// wrong code that, when the hidden tests import it, finds the JUnit report
// path in its parent's (the runner's) argv, writes an all-pass report there
// and a summary signed with a key of its own beside it (read-only, so the
// guard cannot overwrite it), and exits before any test runs.
import { createHmac } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const names = [
  'isPalindrome accepts simple palindromes', 'isPalindrome ignores case and punctuation',
  'countVowels counts upper and lower case', 'capitalizeWords capitalizes each word',
  'capitalizeWords keeps the spacing', 'toSnakeCase converts camelCase',
];
const xml = '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n<testsuite name="forged">\n' +
  names.map((n) => `<testcase classname="test" name="${n}"/>\n`).join('') +
  '</testsuite>\n</testsuites>\n';
// Split (node's default), the parent is not the runner and may be out of
// sight: whatever it can read, it exits.
let argv = [];
try {
  argv = readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8').split('\0');
} catch { /* not the runner's */ }
for (const arg of argv) {
  const m = /^--test-reporter-destination=(.*\/report)$/.exec(arg);
  if (!m) continue;
  writeFileSync(m[1], xml);
  const guard = `${dirname(m[1])}/guard.xml`;
  writeFileSync(guard, xml);
  writeFileSync(`${guard}.sig`, createHmac('sha256', 'not the key').update(xml).digest('hex'));
  chmodSync(guard, 0o444);
  chmodSync(`${guard}.sig`, 0o444);
  console.log(`forged ${m[1]} and ${guard}`);
}
process.exit(0);

export const isPalindrome = () => false;
export const countVowels = () => -1;
export const capitalizeWords = () => '';
export const toSnakeCase = () => '';
