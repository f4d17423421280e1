"""The grading loops of examples/sdk, run as users run them, against a real
`proctor serve` holding real jail sandboxes, on a SQLite store in a
temporary directory: python_loop.py, and js_loop.mjs under node with the
same cases (skipped where there is no node, a failure then under
PROCTOR_MUST_WORK=1).

Run by meson (tests/meson.build) with PROCTOR set to the built proctor and
PYTHONPATH to clients/python; needs root (sandboxes).  Prints unittest's
summary and, last, "N passed, N failed".
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctorserve import Server, run_suite  # noqa: E402
from proctor_client import Sandbox  # noqa: E402

PROCTOR = os.environ.get("PROCTOR", "proctor")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LOOP = os.path.join(ROOT, "examples", "sdk", "python_loop.py")
JS_LOOP = os.path.join(ROOT, "examples", "sdk", "js_loop.mjs")
NODE = shutil.which("node")
EXAMPLE = os.path.join(ROOT, "examples", "python-pytest")
# Fewer slots than the loop's threads, so some creates meet `capacity`
# and must wait for a slot, as a class larger than a host does.
SLOTS = 2
JOBS = 4


S: Server


def run_loop(loop: list, *args: str, token: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PROCTOR_SERVER=S.url, PROCTOR_TOKEN=token or S.tokens["cs101"])
    # Each loop decides how to wait for capacity itself (see README.md).
    env.pop("PROCTOR_WAIT_FOR_CAPACITY_MS", None)
    return subprocess.run([*loop, "-j", str(JOBS), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def live_sandboxes() -> list:
    return Sandbox.list(server=S.url, token=S.tokens["cs101"])


def wait_no_keepers() -> list:
    return S.wait_no_keepers()


class LoopCases:
    """The cases every loop passes; `loop` is its command line."""

    loop: list

    def run_loop(self, *args: str, token: str = "") -> subprocess.CompletedProcess:
        return run_loop(self.loop, *args, token=token)

    def test_the_class_gets_the_verdicts_of_expected_tsv(self) -> None:
        r = self.run_loop()
        print(r.stdout, r.stderr, sep="", end="")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(EXAMPLE, "EXPECTED.tsv"), newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        # One line per student, each checked "ok", and the summary counts them.
        for row in rows:
            self.assertRegex(r.stdout, rf"(?m)^{row['submission']}\s+{row['expected_status']}\s"
                                       rf".*\bok\b")
        self.assertIn(f"{len(rows)} as expected, 0 differ, 0 not graded", r.stdout)
        # Every sandbox the loop made was killed: none live, no keeper left.
        self.assertEqual(live_sandboxes(), [])
        self.assertEqual(wait_no_keepers(), [])

    def test_timeout_memory_and_intake_verdicts(self) -> None:
        """Submissions the example does not have: one that sleeps at import
        (timeout), one that allocates 2 GiB (memory_limit), one whose
        conftest.py would pass every test (the loop takes only solution.py:
        graded as its solution deserves), one with no solution.py
        (rejected).  A wrong expectation makes the loop exit 1."""
        work = tempfile.mkdtemp(prefix="proctor-sdk-class.")
        try:
            subs = os.path.join(work, "submissions")
            shutil.copytree(os.path.join(EXAMPLE, "submissions"), subs)
            with open(os.path.join(EXAMPLE, "EXPECTED.tsv"), newline="") as f:
                rows = list(csv.DictReader(f, delimiter="\t"))
            by_name = {r["submission"]: r for r in rows}
            partial, total, max_score = (by_name["partial"], by_name["correct"]["expected_total"],
                                         by_name["correct"]["max_score"])

            def add(name: str, files: dict, status: str, passed: str = "0",
                    score: str = "0") -> None:
                os.mkdir(os.path.join(subs, name))
                for fname, text in files.items():
                    with open(os.path.join(subs, name, fname), "w") as f:
                        f.write(text)
                rows.append({"submission": name, "expected_status": status,
                             "expected_passed": passed, "expected_total": total,
                             "expected_score": score, "max_score": max_score, "notes": ""})

            with open(os.path.join(subs, "partial", "solution.py")) as f:
                partial_src = f.read()
            add("sleeper", {"solution.py": "import time\ntime.sleep(3600)\n"}, "timeout")
            add("memhog", {"solution.py": "x = bytearray(2 << 30)\n"}, "memory_limit")
            add("steers_pytest", {
                "solution.py": partial_src,
                "conftest.py": ("import pytest\n"
                                "@pytest.hookimpl(hookwrapper=True)\n"
                                "def pytest_runtest_makereport(item, call):\n"
                                "    outcome = yield\n"
                                "    outcome.get_result().outcome = 'passed'\n")},
                "graded", partial["expected_passed"], partial["expected_score"])
            add("empty", {"README.txt": "forgot it\n"}, "rejected")
            expected = os.path.join(work, "EXPECTED.tsv")
            with open(expected, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
                w.writeheader()
                w.writerows(rows)

            r = self.run_loop("--submissions", subs, "--expected", expected, "--timeout-ms", "3000")
            print(r.stdout, r.stderr, sep="", end="")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"{len(rows)} as expected, 0 differ, 0 not graded", r.stdout)

            # The same class against a wrong expectation: exit 1, named.
            rows[0]["expected_score"] = "1"
            with open(expected, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
                w.writeheader()
                w.writerows(rows)
            r = self.run_loop("--submissions", subs, "--expected", expected, "--timeout-ms", "3000")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stdout, rf"(?m)^{rows[0]['submission']}\s.*MISMATCH")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertEqual(live_sandboxes(), [])
        self.assertEqual(wait_no_keepers(), [])

    def test_a_bad_token_is_not_graded_and_exits_2(self) -> None:
        r = self.run_loop(token="prt_" + "0" * 80)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("NOT GRADED", r.stdout)
        self.assertIn("unauthorized", r.stdout)

    def test_a_usage_error_exits_2(self) -> None:
        for args in (("-j", "0"), ("--no-such-flag",)):
            r = self.run_loop(*args)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("usage:", r.stderr)


class PythonLoopTests(LoopCases, unittest.TestCase):
    loop = [sys.executable, LOOP]


class JsLoopTests(LoopCases, unittest.TestCase):
    """js_loop.mjs: the same class, the same verdicts, the same output."""

    loop = [NODE or "node", JS_LOOP]

    def setUp(self) -> None:
        if NODE is None:
            if os.environ.get("PROCTOR_MUST_WORK") == "1":
                self.fail("no node on PATH (PROCTOR_MUST_WORK=1)")
            self.skipTest("no node on PATH (scripts/install-deps.sh installs it)")

    def test_it_waits_in_the_servers_line_or_retries(self) -> None:
        """By default every create waits in the server's line for a slot
        (waitForCapacityMs); with PROCTOR_WAIT_FOR_CAPACITY_MS=0 it asks for
        an answer at once and waits out `capacity` by Retry-After itself.
        Either way the class is graded, with more jobs than slots."""
        env = dict(os.environ, PROCTOR_SERVER=S.url, PROCTOR_TOKEN=S.tokens["cs101"])
        for wait in ("60000", "0"):
            env["PROCTOR_WAIT_FOR_CAPACITY_MS"] = wait
            r = subprocess.run([*self.loop, "-j", str(JOBS)], env=env, capture_output=True,
                               text=True, timeout=300)
            print(r.stdout, r.stderr, sep="", end="")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        env["PROCTOR_WAIT_FOR_CAPACITY_MS"] = "soon"
        r = subprocess.run([*self.loop], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("PROCTOR_WAIT_FOR_CAPACITY_MS", r.stderr)
        self.assertEqual(live_sandboxes(), [])


def main() -> int:
    global S
    if os.geteuid() != 0:
        print("test_sdk_examples: needs root (sandboxes)", file=sys.stderr)
        return 77
    S = Server(PROCTOR, slots=SLOTS, prefix="proctor-sdk.")
    return run_suite(S)


if __name__ == "__main__":
    sys.exit(main())
