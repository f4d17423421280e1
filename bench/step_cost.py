#!/usr/bin/python3
"""What a split test step costs against the same step in one process, per
runner: grade one submission of an example with `proctor grade --json`,
once as the assignment says (split by default) and once from a copy with
`test.in_process: true`, alternating, N rounds, and print the test step's
median CPU and wall time (the sandbox's cgroup measures them) and their
ratios (issue 21: a split JavaScript or Java step costs at most 1.5x its
in-process time; Python's class-level target is bench/class.py's).

    /usr/bin/python3 bench/step_cost.py [--example js-node] [--submission correct]
        [--rounds 8] [--proctor build-release/proctor]

It is a measurement, not a test: it exits 0 unless it cannot run.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JUNIT_JAR = "/usr/share/java/junit-platform-console-standalone.jar"


def in_process_copy(example, root):
    dst = os.path.join(root, os.path.basename(example) + "-in-process")
    shutil.copytree(example, dst, ignore=shutil.ignore_patterns("submissions"))
    path = os.path.join(dst, "assignment.yaml")
    text = open(path).read()
    text, n = re.subn(r"^test:\n", "test:\n  in_process: true\n", text, count=1, flags=re.M)
    if n != 1:
        sys.exit("bench/step_cost.py: no 'test:' block in %s" % path)
    if JUNIT_JAR in text:
        # In one process a JUnit build compiles the tests too.
        tests = sorted(f for f in os.listdir(os.path.join(dst, "tests")) if f.endswith(".java"))
        text, n = re.subn(r"(^build:\n  run: \[javac,)([^\]]*)\]",
                          lambda m: "%s -cp, %s,%s, %s]" % (m.group(1), JUNIT_JAR, m.group(2),
                                                          ", ".join(tests)),
                          text, count=1, flags=re.M)
        if n != 1:
            sys.exit("bench/step_cost.py: no 'build: run: [javac, ...]' in %s" % path)
    open(path, "w").write(text)
    return dst


def grade(proctor, assignment, submission):
    p = subprocess.run([proctor, "grade", "--json", assignment, submission],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("bench/step_cost.py: proctor grade exited %d: %s" % (p.returncode, p.stderr.strip()))
    doc = json.loads(p.stdout)
    step = next((s for s in doc.get("steps", []) if s.get("name") == "test"), None)
    if step is None:
        sys.exit("bench/step_cost.py: no test step in the result (status %s)" % doc.get("status"))
    build = next((s for s in doc.get("steps", []) if s.get("name") == "build"), None)
    return (doc.get("score"), doc.get("max_score"), step["cpu_ms"], step["wall_ms"],
            step["cpu_ms"] + (build["cpu_ms"] if build else 0),
            step["wall_ms"] + (build["wall_ms"] if build else 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--example", default="js-node", help="a directory of examples/")
    ap.add_argument("--submission", default="correct")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--proctor", default=os.path.join(HERE, "..", "build-release", "proctor"))
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("bench/step_cost.py: --rounds must be at least 1")
    example = os.path.abspath(os.path.join(HERE, "..", "examples", args.example))
    sub = os.path.join(example, "submissions", args.submission)
    if not os.path.isdir(sub):
        sys.exit("bench/step_cost.py: no submission %s" % sub)
    got = {"split": [], "in process": []}
    with tempfile.TemporaryDirectory(prefix="proctor-step-bench-") as root:
        os.chmod(root, 0o755)  # the unprivileged intake helper must read the copy
        modes = [("split", example), ("in process", in_process_copy(example, root))]
        for r in range(args.rounds):
            for name, a in (modes if r % 2 == 0 else modes[::-1]):
                got[name].append(grade(args.proctor, a, sub))
    print("%s/%s, %d rounds, test step (median):" % (args.example, args.submission, args.rounds))
    med = {}
    for name, runs in got.items():
        cpu = statistics.median(x[2] for x in runs)
        wall = statistics.median(x[3] for x in runs)
        med[name] = (cpu, wall)
        scores = sorted({"%s/%s" % (x[0], x[1]) for x in runs})
        print("  %-11s cpu %6.0f ms  wall %6.0f ms  score %s" % (name, cpu, wall, ", ".join(scores)))
    for i, what in ((0, "cpu"), (1, "wall")):
        r = med["split"][i] / med["in process"][i] if med["in process"][i] else float("nan")
        print("  ratio split/in process (%s)  %.2f    (target <= 1.50)" % (what, r))
        if r > 1.5:
            print("TARGET MISSED: split/in process (%s) = %.2f, target <= 1.50" % (what, r))
    # A JUnit build compiles the tests in one process, the test step split:
    # the two steps together say what a grading costs.
    for i, what in ((4, "cpu"), (5, "wall")):
        a = statistics.median(x[i] for x in got["split"])
        b = statistics.median(x[i] for x in got["in process"])
        print("  build+test: split %6.0f ms, in process %6.0f ms (%s), ratio %.2f"
              % (a, b, what, a / b if b else float("nan")))


if __name__ == "__main__":
    main()
