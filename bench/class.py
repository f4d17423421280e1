#!/usr/bin/python3
"""Grade a generated class of the Python example with `proctor class -j N`
and run the same test command natively, unsandboxed, with the same
parallelism, each under `timeout -s KILL` with the same wall limit, in one
run.  Prints the wall times and the ratios side by side: the default
(split: tests and submission in two processes) against native (issue 21:
at most 1.25; the year's goal, issue 13: 1.10) and, with --in-process, the
same class with `test.in_process: true`, and split against in process
(issue 21: at most 1.15), which is what splitting costs.

    /usr/bin/python3 bench/class.py [--size 300] [-j 2] [--in-process]
        [--no-sleepers] [--rounds N] [--proctor build-release/proctor]

--no-sleepers leaves out the 10 % of submissions that sleep into the wall
limit (their 5 s each is the same in every mode and hides the rest).
--rounds N repeats the whole measurement, the order of the modes turned
each round so the host's drift falls on all alike; the ratios are printed
per round and of the summed times.

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
    # Each round grades the class afresh: proctor class refuses an --out
    # (and its .jsonl beside it) that exists: it would resume it.
    stem = os.path.splitext(out)[0]
    for f in (out, stem + ".jsonl"):
        if os.path.exists(f):
            os.unlink(f)
    t0 = time.perf_counter()
    rc = subprocess.run([proctor, "class", "-j", str(j), "--out", out, example, cls],
                        stdout=subprocess.DEVNULL).returncode
    took = time.perf_counter() - t0
    if rc != 0:
        sys.exit("bench/class.py: proctor class exited %d (%s): not a measurement" % (rc, out))
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


def generate(example, size, root, cls, seed, sleepers=True):
    rnd = random.Random(seed)
    sources = pick_sources(example, root)
    kinds = [k for k, _ in MIX if k in sources and (sleepers or k != "sleeper")]
    weights = [w for k, w in MIX if k in kinds]
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


def run_native(example, subs, argv, wall, j):
    t0 = time.perf_counter()
    with ThreadPoolExecutor(j) as ex:
        list(ex.map(lambda s: native_one(example, s, argv, wall), subs))
    return time.perf_counter() - t0, 0, {}


def ratio_line(name, num, den, target):
    r = num / den if den > 0 else float("nan")
    print("  ratio %-22s %8.2f    (target <= %.2f)" % (name, r, target))
    if r > target:
        print("TARGET MISSED: %s = %.2f, target <= %.2f" % (name, r, target))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--proctor", default=os.path.join(HERE, "..", "build-release", "proctor"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--in-process", action="store_true",
                    help="also grade the class with test.in_process: true")
    ap.add_argument("--no-sleepers", action="store_true",
                    help="leave out the submissions that sleep into the wall limit")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the measurement, the modes' order turned each round")
    args = ap.parse_args()
    if args.rounds < 1 or args.size < 1 or args.j < 1:
        sys.exit("bench/class.py: --size, -j and --rounds must be at least 1")
    totals = {}
    statuses = {}
    with tempfile.TemporaryDirectory(prefix="proctor-class-bench-") as root:
        os.chmod(root, 0o755)  # the unprivileged intake helper must read submissions
        example = bench_assignment(os.path.abspath(EXAMPLE), root)
        wall = wall_limit(example)
        argv = test_argv(example)
        cls = os.path.join(root, "class")
        os.mkdir(cls)
        generate(os.path.abspath(EXAMPLE), args.size, root, cls, args.seed,
                 sleepers=not args.no_sleepers)
        subs = sorted(os.path.join(cls, s) for s in os.listdir(cls))

        modes = [("native", lambda: run_native(example, subs, argv, wall, args.j)),
                 ("split", lambda: grade_class(args.proctor, args.j, example, cls,
                                               os.path.join(root, "results-split.csv")))]
        if args.in_process:
            in_proc = bench_assignment(os.path.abspath(EXAMPLE), root, in_process=True)
            modes.append(("in process", lambda: grade_class(args.proctor, args.j, in_proc, cls,
                                                            os.path.join(root, "results-in.csv"))))
        print("class of %d submissions of %s%s, -j %d, wall limit %g s, %d round(s)" %
              (args.size, "python-pytest", " (no sleepers)" if args.no_sleepers else "",
               args.j, wall, args.rounds))
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            took = {}
            for name, fn in order:
                t, rc, st = fn()
                took[name] = t
                totals[name] = totals.get(name, 0.0) + t
                statuses[name] = (rc, st)
            print("round %d (%s):" % (r + 1, ", ".join(n for n, _ in order)) + "".join(
                "  %s %.1f s" % (n, took[n]) for n, _ in modes))
            if "in process" in took:
                print("  round %d: split/native %.2f, in process/native %.2f, split/in process %.2f" %
                      (r + 1, took["split"] / took["native"], took["in process"] / took["native"],
                       took["split"] / took["in process"]))
    print("summed over %d round(s):" % args.rounds)
    print("  native (timeout -s KILL)     %8.1f s" % totals["native"])
    for name, _ in modes[1:]:
        rc, st = statuses[name]
        print("  %-28s %8.1f s   (last exit %d, %s)" % ("proctor class (%s)" % name, totals[name], rc, st))
    ratio_line("split/native", totals["split"], totals["native"], 1.25)
    if "in process" in totals:
        ratio_line("in process/native", totals["in process"], totals["native"], 1.25)
        ratio_line("split/in process", totals["split"], totals["in process"], 1.15)
    print("  (the year's goal, issue 13: default/native <= 1.10)")


if __name__ == "__main__":
    main()
