#!/usr/bin/python3
"""A grading loop on Proctor's sandbox API, as users of hosted sandbox SDKs write them.

For each submission of examples/python-pytest: create a sandbox, write the
student's solution.py and the instructor's hidden tests, byte-compile,
run pytest with a JUnit report under a timeout, read the report back,
score it, kill the sandbox.  The class is graded by a thread pool, one
line is printed per student, and each verdict is compared with the
example's EXPECTED.tsv.

    PROCTOR_SERVER=http://127.0.0.1:8080 PROCTOR_TOKEN=prt_... \\
    PYTHONPATH=clients/python /usr/bin/python3 examples/sdk/python_loop.py [-j 4]

Exit status: 0 every verdict matches EXPECTED.tsv; 1 some verdict differs
(or a submission and a row do not pair up); 2 a submission could not be
graded because of the server or this script (an infrastructure error,
never a verdict), or a usage error.  See README.md beside this file.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from proctor_client import Capacity, InvalidInput, NotFound, ProctorError, Sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "python-pytest")

# What examples/python-pytest/assignment.yaml says, restated as a loop's
# author would (only its declared tests and their points are read from
# it): only these files are taken from a submission (a conftest.py or
# pytest.ini a student adds would steer pytest), each at most 64 KiB; its
# build and test steps and their limits.
SUBMISSION_FILES = ["solution.py"]
SUBMISSION_MAX_BYTES = 65536
BUILD = ["python3", "-m", "py_compile", "solution.py"]
REPORT = "/work/report.xml"
TEST = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "--junitxml", REPORT, "test_hidden.py"]
OK_EXIT = (0, 1)  # pytest: all passed, some failed; anything else is a crash
MEMORY_MIB = 512
REPORT_MAX_BYTES = 1 << 20
CAPACITY_WAIT_S = 120.0  # how long a create waits for a free slot in all


@dataclass
class Assignment:
    """What every grading of the class shares."""

    hidden: Dict[str, bytes]  # the instructor's tests/: name -> content
    points: Dict[str, float]  # declared test -> points, from assignment.yaml
    image: str = "host"
    timeout_ms: int = 30_000  # each step's wall limit (assignment.yaml: wall_s 30)


@dataclass
class Grade:
    """One student's verdict, in the terms of docs/result.md."""

    student: str
    status: str  # graded, compile_error, timeout, memory_limit, crashed, rejected
    passed: int = 0
    total: int = 0
    score: float = 0.0
    max_score: float = 0.0
    reason: str = ""
    failed_tests: List[str] = field(default_factory=list)
    seconds: float = 0.0
    infra_error: Optional[str] = None  # ours, not the student's: never scored


def read_points(assignment_yaml: str) -> Dict[str, float]:
    """The declared tests and their points, from the assignment's
    `tests:` list (one `- {name: N, points: P, ...}` per line)."""
    points: Dict[str, float] = {}
    with open(assignment_yaml) as f:
        text = f.read()
    block = text.split("\ntests:\n", 1)[1]
    for m in re.finditer(r"^\s*-\s*\{name:\s*([^,}]+?)\s*(?:,([^}]*))?\}", block, re.M):
        p = re.search(r"points:\s*([0-9.]+)", m.group(2) or "")
        points[m.group(1)] = float(p.group(1)) if p else 1.0
    if not points:
        raise ValueError(f"{assignment_yaml}: no tests declared")
    return points


def create_sandbox(labels: Dict[str, str], image: str) -> Sandbox:
    """Sandbox.create, waiting for a free slot when the server answers
    `capacity` (429 with Retry-After), for at most CAPACITY_WAIT_S."""
    deadline = time.monotonic() + CAPACITY_WAIT_S
    while True:
        try:
            return Sandbox.create(image=image, vcpu=1, memory_mib=MEMORY_MIB, network="none",
                                  timeout_seconds=300, labels=labels)
        except Capacity as err:
            wait = min(err.retry_after or 0.5, 2.0) * random.uniform(0.5, 1.0)
            if time.monotonic() + wait > deadline:
                raise
            time.sleep(wait)


def parse_junit(data: bytes) -> Dict[str, bool]:
    """Test name -> passed, from a JUnit XML report.  The report was written
    in the sandbox, next to the student's code: refuse a DTD (no entity
    expansion) and anything that is not well-formed."""
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("the report declares a DTD")
    root = ET.fromstring(data)
    outcome: Dict[str, bool] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        ok = not any(child.tag in ("failure", "error", "skipped") for child in case)
        outcome[name] = outcome.get(name, True) and ok
    return outcome


def grade_in(sbx: Sandbox, student_dir: str, a: Assignment, g: Grade) -> None:
    """Fill `g` by grading student_dir in the sandbox `sbx`, in the order of
    docs/result.md: intake, build, test step, report."""
    for name in SUBMISSION_FILES:
        path = os.path.join(student_dir, name)
        if not os.path.isfile(path) or os.path.islink(path):
            g.status, g.reason = "rejected", f"{name} is missing"
            return
        if os.path.getsize(path) > SUBMISSION_MAX_BYTES:
            g.status, g.reason = "rejected", f"{name} is over {SUBMISSION_MAX_BYTES} bytes"
            return
        with open(path, "rb") as f:
            sbx.files.write("/work/" + name, f.read())
    # After the student's files: a submitted file of the same name is replaced.
    for name, content in a.hidden.items():
        sbx.files.write("/work/" + name, content)

    build = sbx.exec(BUILD, cwd="/work", timeout_ms=a.timeout_ms)
    if build.status == "error":
        raise ProctorError(500, "run_error", f"build: {build.message}")
    if build.status in ("timeout", "memory_limit"):
        g.status, g.reason = build.status, f"build: {build.message}"
        return
    if build.status != "ok":
        g.status = "compile_error"
        g.reason = (build.stderr.strip().splitlines() or [build.status])[-1]
        return

    run = sbx.exec(TEST, cwd="/work", timeout_ms=a.timeout_ms)
    if run.status == "error":
        raise ProctorError(500, "run_error", f"test: {run.message}")
    if run.timed_out or run.status in ("timeout", "memory_limit"):
        g.status = "memory_limit" if run.status == "memory_limit" else "timeout"
        g.reason = f"pytest: {run.message or run.limit}"
        return
    if run.signal is not None:
        g.status, g.reason = "crashed", f"pytest killed by signal {run.signal}"
        return
    if run.exit_code not in OK_EXIT:
        g.status, g.reason = "crashed", f"pytest exit {run.exit_code}"
        return

    try:
        data = sbx.files.read(REPORT)
    except NotFound:
        g.status, g.reason = "crashed", "no report"
        return
    except InvalidInput as err:  # a symlink or a FIFO planted in its place
        g.status, g.reason = "crashed", f"report unreadable: {err.message}"
        return
    if len(data) > REPORT_MAX_BYTES:
        g.status, g.reason = "crashed", f"report over {REPORT_MAX_BYTES} bytes"
        return
    try:
        outcome = parse_junit(data)
    except (ValueError, ET.ParseError) as err:
        g.status, g.reason = "crashed", f"report unusable: {err}"
        return
    if not any(name in outcome for name in a.points):
        g.status, g.reason = "crashed", "none of the declared tests is in the report"
        return
    g.status = "graded"
    for name, pts in a.points.items():
        if outcome.get(name, False):  # a declared test missing from the report scores 0
            g.passed += 1
            g.score += pts
        else:
            g.failed_tests.append(name)


def grade(student_dir: str, a: Assignment) -> Grade:
    """One student, in a sandbox of their own.  A ProctorError is the
    server's or this script's failure: recorded as such, never scored."""
    student = os.path.basename(student_dir.rstrip("/"))
    g = Grade(student, "error", total=len(a.points), max_score=sum(a.points.values()))
    t0 = time.monotonic()
    try:
        labels = {"course": "cs101", "assignment": "python-pytest", "student": student}
        with create_sandbox(labels, a.image) as sbx:  # killed on the way out, however it ends
            grade_in(sbx, student_dir, a, g)
    except ProctorError as err:
        g.infra_error = str(err)
    g.seconds = time.monotonic() - t0
    return g


def read_expected(path: str) -> Dict[str, Tuple[str, int, int, float, float]]:
    """EXPECTED.tsv: submission -> (status, passed, total, score, max_score)."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            rows[r["submission"]] = (r["expected_status"], int(r["expected_passed"]),
                                     int(r["expected_total"]), float(r["expected_score"]),
                                     float(r["max_score"]))
    return rows


def num(x: float) -> str:
    return f"{x:g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--example", default=EXAMPLE,
                    help="the assignment: its tests/, assignment.yaml (default: %(default)s)")
    ap.add_argument("--submissions", help="one directory per student (default: EXAMPLE/submissions)")
    ap.add_argument("--expected", help="the verdicts to compare with (default: EXAMPLE/EXPECTED.tsv)")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="sandboxes at once (default 4)")
    ap.add_argument("--image", default="host", help="the sandbox's image (default: host)")
    ap.add_argument("--timeout-ms", type=int, default=30_000,
                    help="each step's wall limit (default %(default)s)")
    args = ap.parse_args()
    if args.jobs < 1 or args.timeout_ms < 1:
        ap.error("-j and --timeout-ms must be at least 1")
    subs = args.submissions or os.path.join(args.example, "submissions")
    expected = read_expected(args.expected or os.path.join(args.example, "EXPECTED.tsv"))
    tests_dir = os.path.join(args.example, "tests")
    hidden = {}
    for name in sorted(os.listdir(tests_dir)):
        with open(os.path.join(tests_dir, name), "rb") as f:
            hidden[name] = f.read()
    a = Assignment(hidden, read_points(os.path.join(args.example, "assignment.yaml")),
                   args.image, args.timeout_ms)
    students = sorted(d for d in os.listdir(subs) if os.path.isdir(os.path.join(subs, d)))
    if not students:
        ap.error(f"no submissions in {subs}")

    t0 = time.monotonic()
    mismatches = infra = 0
    print(f"{'student':<14} {'status':<14} {'passed':>6} {'score':>7} {'secs':>5}  check")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        grades = pool.map(lambda s: grade(os.path.join(subs, s), a), students)
        for g in grades:  # in the students' order, each as soon as it and those before are done
            if g.infra_error:
                infra += 1
                print(f"{g.student:<14} {'-':<14} {'-':>6} {'-':>7} {g.seconds:5.1f}  "
                      f"NOT GRADED (infrastructure, not the student's): {g.infra_error}")
                continue
            got = (g.status, g.passed, g.total, g.score, g.max_score)
            want = expected.get(g.student)
            if want == got:
                check = "ok"
            else:
                mismatches += 1
                check = ("NO EXPECTED ROW" if want is None else
                         f"MISMATCH: expected {want[0]} {want[1]}/{want[2]} "
                         f"{num(want[3])}/{num(want[4])}")
            detail = g.reason or (", ".join(f"fails {t}" for t in g.failed_tests))
            print(f"{g.student:<14} {g.status:<14} {f'{g.passed}/{g.total}':>6} "
                  f"{f'{num(g.score)}/{num(g.max_score)}':>7} {g.seconds:5.1f}  {check}"
                  + (f"  ({detail})" if detail else ""))
    for missing in sorted(set(expected) - set(students)):
        mismatches += 1
        print(f"{missing:<14} MISSING: EXPECTED.tsv has a row but there is no submission")
    print(f"{len(students)} graded in {time.monotonic() - t0:.1f} s with -j {args.jobs}: "
          f"{len(students) - mismatches - infra} as expected, {mismatches} differ, "
          f"{infra} not graded")
    if infra:
        return 2
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
