#!/usr/bin/python3
"""Where a split Python test step's cost goes, without a sandbox: the same
hidden tests and an honest solution run as plain pytest in one process and
as a split run (harness + program side over a socketpair on fd 3, as the
sandbox starts them), interleaved, in one run.

    unshare -m --propagation private /usr/bin/python3 bench/split_cost.py \\
        [--assignment examples/python-pytest] [--submission correct] [--rounds 10] [--callgrind]

It prints, for each: the median wall time, the CPU time of the harness (or
of pytest in one process) and of the program side, and the ratio split /
one process; with --callgrind, also the instructions each process executes
under valgrind's callgrind (deterministic: the same binary, inputs and
environment give the same count whatever else the machine does).  The
runtime is given its checked-hash bytecode, as runtime_pyc.c gives it in a
grading.

It needs a private mount namespace (the runtime works in /work, which the
script bind-mounts over a temporary copy): run it under `unshare -m
--propagation private` as root.  It runs only the assignment's reference
or a submission you name, never a hostile one.  A measurement, not a test:
it exits 0 unless it cannot run.
"""
import argparse
import os
import py_compile
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(HERE, "..", "src", "grade", "runtimes", "python", "proctor_split.py")
VALGRIND = ["/usr/bin/valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
PROGRAM_UID = 65534


def env_for(rt):
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": rt, "PYTHONSAFEPATH": "1",
            "PYTHONNOUSERSITE": "1", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "HOME": "/work", "TZ": "UTC",
            "LC_ALL": "C.UTF-8"}


def spawn(fd, argv, env, uid=None, err=None):
    pid = os.fork()
    if pid == 0:
        try:
            if fd is not None:
                os.dup2(fd, 3)
                os.set_inheritable(3, True)
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if err else null, 2)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            os.chdir("/work")
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid


def cpu(ru):
    return ru.ru_utime + ru.ru_stime


def one_process(rt, cmd, grind=False, err=None):
    t = time.perf_counter()
    argv = ["/usr/bin/python3", "-m", "pytest"] + cmd
    pid = spawn(None, (VALGRIND if grind else []) + argv, dict(env_for(rt), PYTHONSAFEPATH="0"),
                err=err)
    _, _, ru = os.wait4(pid, 0)
    return time.perf_counter() - t, cpu(ru), 0.0


def split(rt, cmd, grind=False, errs=(None, None)):
    a, b = socket.socketpair()
    t = time.perf_counter()
    pre = VALGRIND if grind else []
    h = spawn(a.fileno(), pre + ["/usr/bin/python3", "-m", "proctor_split", "harness", "pytest"]
              + cmd, env_for(rt), err=errs[0])
    p = spawn(b.fileno(), pre + ["/usr/bin/python3", "-m", "proctor_split", "program"],
              env_for(rt), uid=PROGRAM_UID, err=errs[1])
    a.close()
    b.close()
    res = {}
    for _ in range(2):
        pid, _, ru = os.wait4(-1, 0)
        res[pid] = cpu(ru)
    return time.perf_counter() - t, res[h], res[p]


def instructions(path):
    m = re.search(r"Collected : (\d+)", open(path).read())
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--assignment", default=os.path.join(HERE, "..", "examples", "python-pytest"))
    ap.add_argument("--submission", default="correct",
                    help="a directory of the assignment's submissions/, or 'reference'")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/split_cost.py: run it as root, under unshare -m --propagation private")

    a = os.path.abspath(args.assignment)
    sub = os.path.join(a, args.submission if args.submission == "reference"
                       else os.path.join("submissions", args.submission))
    text = open(os.path.join(a, "assignment.yaml")).read()
    m = re.search(r"^test:\s*\n\s*run:\s*\[([^\]]*)\]", text, re.M)
    if not m or "pytest" not in m.group(1):
        sys.exit("bench/split_cost.py: %s has no pytest test step" % a)
    run = [x.strip().strip('"') for x in m.group(1).split(",")]
    cmd = [x for x in run[run.index("pytest") + 1:] if "{report" not in x]

    root = tempfile.mkdtemp(prefix="proctor-split-cost-")
    work, rt = os.path.join(root, "work"), os.path.join(root, "rt")
    os.makedirs(os.path.join(rt, "pycache"))
    shutil.copy(RUNTIME, rt)
    py_compile.compile(os.path.join(rt, "proctor_split.py"),
                       cfile=os.path.join(rt, "__pycache__", "proctor_split.cpython-%d%d.pyc"
                                          % sys.version_info[:2]),
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    shutil.copytree(os.path.join(a, "tests"), work)
    shutil.copy(os.path.join(sub, "solution.py"), work)
    # As in a sandbox: the tests the harness's (here root's), the
    # solution the program's, /work sticky and writable by all.
    os.chown(os.path.join(work, "solution.py"), PROGRAM_UID, PROGRAM_UID)
    for d, _, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    os.chmod(work, 0o1777)
    subprocess.run(["mount", "--bind", work, "/work"], check=True)
    try:
        rows = {"one process": [], "split": []}
        for _ in range(2):  # warm-up
            one_process(rt, cmd)
            split(rt, cmd)
        for _ in range(args.rounds):
            rows["one process"].append(one_process(rt, cmd))
            rows["split"].append(split(rt, cmd))
        print("%s, %s, %d rounds interleaved (median)" % (os.path.basename(a), args.submission,
                                                         args.rounds))
        for k, v in rows.items():
            print("  %-12s wall %6.3f s   cpu: harness or pytest %6.3f s, program side %6.3f s"
                  % (k, statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
                     statistics.median(x[2] for x in v)))
        ow = statistics.median(x[0] for x in rows["one process"])
        sw = statistics.median(x[0] for x in rows["split"])
        oc = statistics.median(x[1] for x in rows["one process"])
        sc = statistics.median(x[1] + x[2] for x in rows["split"])
        print("  ratio split / one process: wall %.2f, cpu %.2f" % (sw / ow, sc / oc))
        if args.callgrind:
            e1, eh, ep = (os.path.join(root, n) for n in ("one.cg", "harness.cg", "program.cg"))
            one_process(rt, cmd, grind=True, err=e1)
            split(rt, cmd, grind=True, errs=(eh, ep))
            io_, ih, ip = instructions(e1), instructions(eh), instructions(ep)
            print("  instructions: one process %d; split: harness %d, program side %d"
                  % (io_, ih, ip))
            print("  ratio split / one process: instructions %.2f (harness %.2f, program side "
                  "%.2f of one process)" % ((ih + ip) / io_, ih / io_, ip / io_))
    finally:
        subprocess.run(["umount", "/work"], check=False)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
