#!/usr/bin/python3
"""Start-up cost of `proctor run` next to plain exec, unshare and bubblewrap.

Measures the wall time from spawning a command to reaping it, for every
command in one interleaved run: each round runs every command once, in an
order shuffled per round, so drift in the machine's speed (frequency
scaling, a noisy neighbour, page cache) falls on all commands alike.  A few
unrecorded warm-up rounds come first.

This is a measurement, not a test: it exits 0 whatever the numbers are and
prints a "TARGET MISSED" line for each project target that is missed.
Only the standard library of Debian's /usr/bin/python3 is used.
"""

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

# Ratios of medians the project targets: (name, numerator, denominator,
# target or None for "report only").
RATIOS = [
    ("proctor/unshare", "proctor", "unshare", 1.0),
    ("proctor/bwrap", "proctor", "bwrap", 0.5),
    ("sandboxed/native python", "proctor-python", "python", None),
]

BWRAP_ARGS = [
    "--unshare-all", "--die-with-parent",
    "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
]


def commands(proctor):
    """The commands measured, in table order: (label, argv).

    argv[0] is resolved later; a name without a slash is looked up on PATH.
    """
    return [
        ("true", ["/bin/true"]),
        ("unshare", ["unshare", "--fork", "--pid", "--net", "--mount", "--ipc",
                     "--uts", "--mount-proc", "/bin/true"]),
        ("proctor", [proctor, "run", "--", "/bin/true"]),
        ("bwrap", ["bwrap"] + BWRAP_ARGS + ["/bin/true"]),
        ("python", ["/usr/bin/python3", "-c", "pass"]),
        ("proctor-python", [proctor, "run", "--", "/usr/bin/python3", "-c", "pass"]),
    ]


def resolve(prog):
    """Absolute path of an executable, or None."""
    if "/" in prog:
        return os.path.abspath(prog) if os.access(prog, os.X_OK) and os.path.isfile(prog) else None
    return shutil.which(prog)


def preflight(path, argv):
    """Run a command once with its output captured; None if it works, else why not."""
    try:
        cp = subprocess.run([path] + argv[1:], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if cp.returncode == 0:
        return None
    lines = cp.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = lines[-1] if lines else "no message"
    how = (f"exit status {cp.returncode}" if cp.returncode > 0
           else f"killed by signal {-cp.returncode}")
    return f"{how}: {detail}"


class Spawner:
    """Spawns commands with stdin from /dev/null and stdout/stderr to it."""

    def __init__(self):
        # Opened once, non-inheritable; dup2 in the child clears CLOEXEC.
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        self.actions = [
            (os.POSIX_SPAWN_DUP2, self.devnull, 0),
            (os.POSIX_SPAWN_DUP2, self.devnull, 1),
            (os.POSIX_SPAWN_DUP2, self.devnull, 2),
        ]
        self.env = dict(os.environ)

    def time_once(self, path, argv):
        """Nanoseconds from spawn to reap, and the wait status."""
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(path, argv, self.env, file_actions=self.actions)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        return t1 - t0, status

    def close(self):
        os.close(self.devnull)


def stats_ms(samples_ns):
    ms = sorted(s / 1e6 for s in samples_ns)
    if len(ms) >= 2:
        p99 = statistics.quantiles(ms, n=100, method="inclusive")[98]
    else:
        p99 = ms[0]
    return {
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "p99_ms": p99,
        "mean_ms": statistics.fmean(ms),
        "min_ms": ms[0],
        "max_ms": ms[-1],
    }


def measure(cmds, runs, warmup, rng, progress):
    """Interleaved rounds; returns {label: (samples_ns, failures)}."""
    spawner = Spawner()
    samples = {label: [] for label, _, _ in cmds}
    failures = {label: 0 for label, _, _ in cmds}
    total = warmup + runs
    # The collector would otherwise run at arbitrary points inside a timing.
    gc.disable()
    try:
        for rnd in range(total):
            order = list(cmds)
            rng.shuffle(order)
            for label, path, argv in order:
                ns, status = spawner.time_once(path, argv)
                if rnd < warmup:
                    continue
                if os.waitstatus_to_exitcode(status) != 0:
                    # A failed run may be fast for the wrong reason: keep it out.
                    failures[label] += 1
                else:
                    samples[label].append(ns)
            if progress and (rnd + 1) % 20 == 0:
                print(f"  round {rnd + 1}/{total}", file=sys.stderr, flush=True)
    finally:
        gc.enable()
        spawner.close()
    return {label: (samples[label], failures[label]) for label in samples}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200,
                    help="recorded runs of each command (default 200)")
    ap.add_argument("--warmup", type=int, default=5,
                    help="unrecorded warm-up runs of each command first (default 5)")
    ap.add_argument("--proctor", default="./build-release/proctor",
                    help="the proctor binary (default ./build-release/proctor)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE as JSON")
    ap.add_argument("--seed", type=int, help="seed for the per-round shuffle (default: random)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.warmup < 0:
        ap.error("--warmup must not be negative")

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)

    cmds, skipped = [], {}
    argvs = {}
    for label, argv in commands(args.proctor):
        argvs[label] = argv
        path = resolve(argv[0])
        if path is None:
            skipped[label] = f"'{argv[0]}' not found or not executable"
            continue
        why = preflight(path, argv)
        if why is not None:
            skipped[label] = f"'{' '.join(argv)}' does not work here: {why}"
            continue
        cmds.append((label, path, argv))

    print(f"startup benchmark: {args.runs} runs + {args.warmup} warm-up per command, "
          f"interleaved, seed {seed}")
    print(f"host: {platform.node()}, Linux {platform.release()}, {os.cpu_count()} CPUs, "
          f"uid {os.geteuid()}")
    for label, why in skipped.items():
        print(f"SKIPPED {label}: {why}")
    sys.stdout.flush()

    measured = measure(cmds, args.runs, args.warmup, rng, not args.quiet) if cmds else {}

    report = {
        "runs": args.runs,
        "warmup": args.warmup,
        "seed": seed,
        "host": {
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "uid": os.geteuid(),
        },
        "commands": {},
        "ratios": {},
    }

    print()
    print(f"{'command':<16} {'median ms':>10} {'p99 ms':>10} {'mean ms':>10} {'failed':>7}")
    medians = {}
    for label, _ in commands(args.proctor):
        entry = {"argv": argvs[label]}
        if label in skipped:
            entry["skipped"] = skipped[label]
            print(f"{label:<16} {'skipped':>10}")
        else:
            samples, failed = measured[label]
            entry["failures"] = failed
            if samples:
                st = stats_ms(samples)
                entry.update({k: round(v, 4) if isinstance(v, float) else v
                              for k, v in st.items()})
                entry["samples_ms"] = [round(s / 1e6, 4) for s in samples]
                medians[label] = st["median_ms"]
                print(f"{label:<16} {st['median_ms']:>10.2f} {st['p99_ms']:>10.2f} "
                      f"{st['mean_ms']:>10.2f} {failed:>7}")
            else:
                print(f"{label:<16} {'all failed':>10} {'':>10} {'':>10} {failed:>7}")
            if failed:
                print(f"WARNING {label}: {failed} of {args.runs} runs exited non-zero "
                      f"and are not in its numbers")
        report["commands"][label] = entry

    print()
    print("ratios of medians:")
    for name, num, den, target in RATIOS:
        entry = {"numerator": num, "denominator": den, "target_max": target}
        if num in medians and den in medians and medians[den] > 0:
            value = medians[num] / medians[den]
            entry["value"] = round(value, 4)
            goal = f"(target <= {target:g})" if target is not None else "(no target)"
            print(f"  {name:<26} {value:6.2f}  {goal}")
            if target is not None:
                entry["met"] = value <= target
        else:
            missing = [x for x in (num, den) if x not in medians]
            entry["value"] = None
            entry["met"] = None
            print(f"  {name:<26} {'n/a':>6}  (not measured: no numbers for "
                  f"{', '.join(missing)})")
        report["ratios"][name] = entry

    missed = [(n, e) for n, e in report["ratios"].items() if e.get("met") is False]
    if missed:
        print()
    for name, e in missed:
        print(f"TARGET MISSED: {name} = {e['value']:.2f}, target <= {e['target_max']:g}")

    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2)
                f.write("\n")
        except OSError as e:
            print(f"could not write {args.json}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    except BrokenPipeError:
        # Output piped into `head`: the reader left, nothing more to say.
        sys.stderr.close()
    sys.exit(0)
