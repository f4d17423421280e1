#!/usr/bin/python3
"""Grade a generated class of the Python example with `proctor class -j N`
and run the same test command natively, unsandboxed, with the same
parallelism, each under `timeout -s KILL` with the same wall limit, in one
run.  Prints the wall times and the ratio to native (target <= 1.10, issue
13), for the default (split: tests and submission in two processes) and,
with --in-process, also for the same class with `test.in_process: true`,
which shows what splitting costs.

    /usr/bin/python3 bench/class.py [--size 300] [-j 2] [--proctor build-release/proctor]

It is a measurement, not a test: it always exits 0 unless it cannot run.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "python-pytest")

# The mix of the generated class: (kind, share).  "sleeper" is made here: a
# solution that sleeps at import, so both sides run into the wall limit.
MIX = [("correct", 0.50), ("partial", 0.25), ("syntax_error", 0.08), ("sys_exit", 0.07),
       ("sleeper", 0.10)]
BENCH_WALL_S = 5  # the bench's copy of the assignment uses this test wall limit


def pick_sources(example, root):
    subs = os.path.join(example, "submissions")
    chosen = {k: os.path.join(subs, k) for k, _ in MIX if os.path.isdir(os.path.join(subs, k))}
    sleeper = os.path.join(root, "sleeper-src")
    os.mkdir(sleeper)
    with open(os.path.join(sleeper, "solution.py"), "w") as f:
        f.write("import time\ntime.sleep(3600)\n")
    chosen["sleeper"] = sleeper
    if "correct" not in chosen:
        sys.exit("bench/class.py: no 'correct' submission in %s" % subs)
    return chosen


def bench_assignment(example, root, in_process=False):
    """A copy of the example whose test step has a short wall limit."""
    dst = os.path.join(root, "assignment-in-process" if in_process else "assignment")
    shutil.copytree(example, dst, ignore=shutil.ignore_patterns("submissions"))
    path = os.path.join(dst, "assignment.yaml")
    text = open(path).read()
    text = re.sub(r"(^test:.*?wall_s:\s*)[0-9.]+", r"\g<1>%d" % BENCH_WALL_S, text,
                  count=1, flags=re.S | re.M)
    if in_process:
        text = re.sub(r"^test:\n", "test:\n  in_process: true\n", text, count=1, flags=re.M)
    open(path, "w").write(text)
    return dst


def grade_class(proctor, j, example, cls, out):
    t0 = time.perf_counter()
    rc = subprocess.run([proctor, "class", "-j", str(j), "--out", out, example, cls],
                        stdout=subprocess.DEVNULL).returncode
    took = time.perf_counter() - t0
    statuses = {}
    if os.path.exists(out):
        for line in open(out).read().splitlines()[1:]:
            st = line.split(",")[1] if "," in line else "?"
            statuses[st] = statuses.get(st, 0) + 1
    return took, rc, statuses


def wall_limit(example):
    text = open(os.path.join(example, "assignment.yaml")).read()
    m = re.search(r"^test:.*?wall_s:\s*([0-9.]+)", text, re.S | re.M)
    return float(m.group(1)) if m else 20.0


def test_argv(example):
    """The example's test command, with {report} filled in (simple YAML flow list)."""
    text = open(os.path.join(example, "assignment.yaml")).read()
    m = re.search(r"^test:\s*\n\s+run:\s*\[(.*?)\]", text, re.S | re.M)
    if not m:
        sys.exit("bench/class.py: cannot find test.run in assignment.yaml")
    args = [a.strip().strip('"').strip("'") for a in m.group(1).split(",")]
    return [a.replace("{report}", "report.xml").replace("{report_dir}", ".") for a in args]


def generate(example, size, root, cls, seed):
    rnd = random.Random(seed)
    sources = pick_sources(example, root)
    kinds = [k for k, _ in MIX if k in sources]
    weights = [w for k, w in MIX if k in sources]
    for i in range(size):
        kind = rnd.choices(kinds, weights)[0]
        shutil.copytree(sources[kind], os.path.join(cls, "s%03d-%s" % (i, kind)))


def native_one(example, sub, argv, wall):
    with tempfile.TemporaryDirectory(prefix="proctor-native-") as d:
        for src in (os.path.join(example, "tests"), sub):
            for name in os.listdir(src):
                p = os.path.join(src, name)
                if os.path.isfile(p):
                    shutil.copy(p, d)
        argv = ["/usr/bin/python3" if a == "python3" else a for a in argv]
        subprocess.run(["timeout", "-s", "KILL", str(wall)] + argv, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--proctor", default=os.path.join(HERE, "..", "build-release", "proctor"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--in-process", action="store_true",
                    help="also grade the class with test.in_process: true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="proctor-class-bench-") as root:
        os.chmod(root, 0o755)  # the unprivileged intake helper must read submissions
        example = bench_assignment(os.path.abspath(EXAMPLE), root)
        wall = wall_limit(example)
        argv = test_argv(example)
        cls = os.path.join(root, "class")
        os.mkdir(cls)
        generate(os.path.abspath(EXAMPLE), args.size, root, cls, args.seed)
        subs = sorted(os.path.join(cls, s) for s in os.listdir(cls))

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.j) as ex:
            list(ex.map(lambda s: native_one(example, s, argv, wall), subs))
        native = time.perf_counter() - t0

        runs = [("proctor class (split)", example)]
        if args.in_process:
            runs.append(("proctor class (in process)",
                         bench_assignment(os.path.abspath(EXAMPLE), root, in_process=True)))
        results = []
        for k, (label, a) in enumerate(runs):
            results.append((label,) + grade_class(args.proctor, args.j, a, cls,
                                                  os.path.join(root, "results%d.csv" % k)))
    print("class of %d submissions of %s, -j %d, wall limit %g s" % (args.size, "python-pytest", args.j, wall))
    print("  native (timeout -s KILL)     %8.1f s" % native)
    for label, took, rc, statuses in results:
        print("  %-28s %8.1f s   (exit %d, %s)" % (label, took, rc, statuses))
    for label, took, _, _ in results:
        ratio = took / native if native > 0 else float("nan")
        print("  ratio %-22s %8.2f    (target <= 1.10)" % (label.replace("proctor class ", "") + "/native", ratio))
        if ratio > 1.10:
            print("TARGET MISSED: %s/native = %.2f, target <= 1.10" % (label, ratio))


if __name__ == "__main__":
    main()
