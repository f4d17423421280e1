"""Room and money for sandboxes (issue 24) through the Python client
(clients/python), against a real `proctor serve --slots 2` holding real jail
sandboxes: creates waiting in line for a slot (wait_for_capacity_ms), fair
between courses; a token's live maximum and daily spending limit; a
sandbox's max_cost_micros.

Run by meson (tests/meson.build) with PROCTOR set to the built proctor and
PYTHONPATH to clients/python; needs root (sandboxes).  Prints unittest's
summary and, last, "N passed, N failed".
"""

import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.request
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctorserve import Server, run_suite  # noqa: E402
from proctor_client import (BudgetExceeded, Capacity, Forbidden, InvalidInput,  # noqa: E402
                            NotFound, Sandbox)
from proctor_client import _Client  # noqa: E402  (the token routes have no helper)

PROCTOR = os.environ.get("PROCTOR", "proctor")
SLOTS = 2

S: Server
ADMIN: Dict[str, str] = {}


def sbx(course: str = "cs101", token: Optional[str] = None, **kw: Any) -> Sandbox:
    """A sandbox; one that finds no room waits for it (a killed sandbox's
    slot frees when its keeper has exited) unless told otherwise."""
    kw.setdefault("memory_mib", 64)
    kw.setdefault("wait_for_capacity_ms", 30_000)
    return Sandbox.create(server=S.url, token=token or S.tokens[course], **kw)


def admin(course: str = "cs101") -> _Client:
    if course not in ADMIN:
        ADMIN[course] = S.token(course, "admin")
    return _Client(S.url, ADMIN[course])


def mint(course: str = "cs101", **limits: Any) -> Dict[str, Any]:
    """A new instructor token of `course` with limits, made by its admin."""
    return admin(course).call("POST", "/v1/tokens", {"scope": "instructor", **limits})


def metric(name: str) -> float:
    with urllib.request.urlopen(S.url + "/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


class Holding:
    """Both slots held by sandboxes of course cs101 until released."""

    def __enter__(self) -> List[Sandbox]:
        self.held = [sbx(wait_for_capacity_ms=30_000) for _ in range(SLOTS)]
        return self.held

    def __exit__(self, *exc: Any) -> None:
        for s in self.held:
            s.kill()


def in_thread(fn: Any, *args: Any, **kw: Any) -> Dict[str, Any]:
    """Run fn in a thread; the dict gets "value" or "error", "seconds", and
    "thread" to join."""
    out: Dict[str, Any] = {}

    def run() -> None:
        t0 = time.monotonic()
        try:
            out["value"] = fn(*args, **kw)
        except Exception as err:  # noqa: BLE001  (the test looks at it)
            out["error"] = err
        out["seconds"] = time.monotonic() - t0

    out["thread"] = threading.Thread(target=run)
    out["thread"].start()
    return out


def waiting_now() -> float:
    return metric("proctor_sandbox_capacity_waiting")


def until(cond: Any, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


class CapacityTests(unittest.TestCase):

    def test_more_creates_than_slots_all_finish_waiting_in_line(self) -> None:
        waits_before = metric("proctor_sandbox_capacity_waits_total")

        def one(i: int) -> Dict[str, Any]:
            t0 = time.monotonic()
            s = sbx(wait_for_capacity_ms=60_000, labels={"n": str(i)})
            waited = time.monotonic() - t0
            try:
                r = s.exec(["sh", "-c", f"sleep 0.5; echo {i}"])
                return {"id": s.id, "out": r.stdout, "waited": waited}
            finally:
                s.kill()

        t0 = time.monotonic()
        runs = [in_thread(one, i) for i in range(6)]
        for r in runs:
            r["thread"].join(120)
        total = time.monotonic() - t0
        errors = [r.get("error") for r in runs if "error" in r]
        self.assertEqual(errors, [])
        self.assertEqual(sorted(r["value"]["out"] for r in runs), [f"{i}\n" for i in range(6)])
        self.assertEqual(len({r["value"]["id"] for r in runs}), 6)
        waited = sorted(r["value"]["waited"] for r in runs)
        print(f"6 creates on {SLOTS} slots: {total:.2f} s in all, waits "
              + ", ".join(f"{w:.2f}" for w in waited), file=sys.stderr)
        # Three rounds of a half-second command: the last waits about two.
        self.assertLess(waited[-1], 20)
        self.assertLess(total, 30)
        self.assertGreaterEqual(metric("proctor_sandbox_capacity_waits_total") - waits_before, 1)
        self.assertEqual(waiting_now(), 0)

    def test_without_waiting_a_full_host_is_429_capacity_with_retry_after(self) -> None:
        with Holding():
            t0 = time.monotonic()
            with self.assertRaises(Capacity) as cm:
                sbx(wait_for_capacity_ms=None)
            self.assertLess(time.monotonic() - t0, 5)
            err = cm.exception
            self.assertEqual((err.status, err.code), (429, "capacity"))
            self.assertIsNotNone(err.retry_after)
            self.assertIn(f"{SLOTS} slots, every one taken", err.message)
            self.assertIn("wait_for_capacity_ms", err.message)

    def test_a_wait_that_runs_out_is_capacity_saying_so(self) -> None:
        with Holding():
            t0 = time.monotonic()
            with self.assertRaises(Capacity) as cm:
                sbx(wait_for_capacity_ms=1500)
            took = time.monotonic() - t0
            self.assertGreaterEqual(took, 1.4)
            self.assertLess(took, 6)
            self.assertEqual(cm.exception.status, 429)
            self.assertIn("within wait_for_capacity_ms (1500 ms)", cm.exception.message)
            self.assertIsNotNone(cm.exception.retry_after)
        self.assertEqual(waiting_now(), 0)

    def test_a_waiter_gets_the_slot_that_frees(self) -> None:
        with Holding() as held:
            w = in_thread(sbx, wait_for_capacity_ms=30_000)
            self.assertTrue(until(lambda: waiting_now() == 1))
            time.sleep(0.5)
            self.assertNotIn("value", w)
            held[0].kill()
            w["thread"].join(60)
            self.assertNotIn("error", w)
            w["value"].kill()
            self.assertLess(w["seconds"], 10)

    def test_courses_take_turns_in_the_line(self) -> None:
        """Three creates of cs101 wait, then three of other: with one slot
        freed, the grants alternate, each course in its own order."""
        order: List[str] = []
        lock = threading.Lock()

        def one(course: str, n: int) -> None:
            s = sbx(course, wait_for_capacity_ms=60_000)
            with lock:
                order.append(f"{course}{n}")
            s.kill()

        with Holding() as held:
            runs = []
            for course in ("cs101", "other"):
                for n in range(3):
                    runs.append(in_thread(one, course, n))
                    # Their order of arrival is the order asserted.
                    self.assertTrue(until(lambda: waiting_now() == len(runs)))
            held[0].kill()  # one slot: the grants come one at a time
            for r in runs:
                r["thread"].join(120)
            self.assertEqual([r.get("error") for r in runs if "error" in r], [])
        self.assertEqual(order, ["cs1010", "other0", "cs1011", "other1", "cs1012", "other2"])

    def test_a_token_at_its_live_maximum_waits_or_is_refused(self) -> None:
        t = mint(max_live_sandboxes=1)
        self.assertEqual(t["max_live_sandboxes"], 1)
        first = sbx(token=t["token"], wait_for_capacity_ms=30_000)
        try:
            with self.assertRaises(Capacity) as cm:
                sbx(token=t["token"], wait_for_capacity_ms=None)
            self.assertIn("max_live_sandboxes (1)", cm.exception.message)
            # Another token of the course is not held up by this one's.
            sbx().kill()
            w = in_thread(sbx, token=t["token"], wait_for_capacity_ms=30_000)
            self.assertTrue(until(lambda: waiting_now() == 1))
            time.sleep(0.5)
            self.assertNotIn("value", w)
        finally:
            first.kill()
        w["thread"].join(60)
        self.assertNotIn("error", w)
        w["value"].kill()
        # A token allowed none waits for nothing.
        none = mint(max_live_sandboxes=0)
        with self.assertRaises(Capacity):
            sbx(token=none["token"], wait_for_capacity_ms=300)


class MoneyTests(unittest.TestCase):

    def test_info_reports_usage_and_cost_so_far(self) -> None:
        with sbx(memory_mib=1024) as s:
            s.exec(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            time.sleep(1)
            info = s.get_info()
            u = info["usage"]
            self.assertIsNone(info["max_cost_micros"])
            self.assertGreater(u["cpu_seconds"], 0)
            self.assertGreater(u["reserved_gib_seconds"], 1)
            # $0.0504 a vCPU-hour and $0.0162 a GiB-hour (serve's defaults).
            want = (u["cpu_seconds"] * 0.0504 + u["reserved_gib_seconds"] * 0.0162) / 3600 * 1e6
            self.assertAlmostEqual(u["cost_micros"], int(want), delta=1)
            self.assertEqual(s.cost_micros >= u["cost_micros"], True)

    def test_max_cost_ends_the_sandbox_and_cuts_its_command_short(self) -> None:
        # 1 GiB costs 4.5 micro-dollars a second: 10 are reached in about 2 s.
        s = sbx(memory_mib=1024, max_cost_micros=10)
        self.assertEqual(s.get_info()["max_cost_micros"], 10)
        t0 = time.monotonic()
        with self.assertRaises(NotFound) as cm:
            s.exec(["sleep", "60"], timeout_ms=90_000)
        took = time.monotonic() - t0
        print(f"max_cost_micros 10: the command was cut after {took:.2f} s", file=sys.stderr)
        self.assertLess(took, 15)
        self.assertIn("expired while the command ran", cm.exception.message)
        self.assertIn("max_cost_micros", cm.exception.message)  # and why
        info = s.get_info()
        self.assertEqual(info["state"], "expired")
        self.assertIn("max_cost_micros", info["end_reason"])
        self.assertGreaterEqual(info["usage"]["cost_micros"], 10)
        self.assertEqual(s.execs()[-1]["state"], "done")
        self.assertGreaterEqual(metric("proctor_sandboxes_ended_over_cost_total"), 1)

    def test_a_token_past_its_daily_spend_is_refused_budget_exceeded(self) -> None:
        t = mint(daily_spend_micros=5)
        s = sbx(token=t["token"], memory_mib=2048)
        time.sleep(1.5)  # 2 GiB: 9 micro-dollars a second
        # Its live sandbox's reserved memory counts as it goes: a command
        # in it is refused too, not only the next create.
        with self.assertRaises(BudgetExceeded):
            s.exec(["true"])
        s.kill()
        with self.assertRaises(BudgetExceeded) as cm:
            sbx(token=t["token"], wait_for_capacity_ms=1000)
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "budget_exceeded"))
        self.assertIn("daily_spend_micros 5", cm.exception.message)
        # The course's other tokens spend on.
        sbx().kill()
        zero = mint(daily_spend_micros=0)
        with self.assertRaises(BudgetExceeded):
            sbx(token=zero["token"], wait_for_capacity_ms=None)


class TokenLimitTests(unittest.TestCase):

    def test_only_an_admin_sets_token_limits(self) -> None:
        instructor = _Client(S.url, S.tokens["cs101"])
        with self.assertRaises(Forbidden):
            instructor.call("POST", "/v1/tokens", {"scope": "instructor", "max_live_sandboxes": 9})
        t = mint(daily_spend_micros=1000, max_live_sandboxes=3)
        with self.assertRaises(Forbidden):
            instructor.call("PUT", f"/v1/tokens/{t['token_id']}", {"max_live_sandboxes": 9})
        # The limited token is an instructor's: it cannot lift its own.
        with self.assertRaises(Forbidden):
            _Client(S.url, t["token"]).call("PUT", f"/v1/tokens/{t['token_id']}", {})
        row = admin().call("PUT", f"/v1/tokens/{t['token_id']}", {"max_live_sandboxes": 5})
        self.assertEqual((row["daily_spend_micros"], row["max_live_sandboxes"]), (None, 5))
        listed = {x["token_id"]: x for x in admin().call("GET", "/v1/tokens")["tokens"]}
        self.assertEqual(listed[t["token_id"]]["max_live_sandboxes"], 5)
        # Another course's admin does not find it.
        with self.assertRaises(NotFound):
            admin("other").call("PUT", f"/v1/tokens/{t['token_id']}", {})

    def test_bad_limits_and_create_members_name_the_field_and_its_bound(self) -> None:
        cases = [
            ({"scope": "instructor", "daily_spend_micros": -1}, "daily_spend_micros"),
            ({"scope": "instructor", "max_live_sandboxes": 100001}, "100000"),
            ({"scope": "instructor", "max_live_sandboxes": "2"}, "max_live_sandboxes"),
        ]
        for body, words in cases:
            with self.assertRaises(InvalidInput) as cm:
                admin().call("POST", "/v1/tokens", body)
            self.assertIn(words, cm.exception.message)
        for kw, words in [({"wait_for_capacity_ms": 600_001}, "600000"),
                          ({"wait_for_capacity_ms": -1}, "wait_for_capacity_ms"),
                          ({"max_cost_micros": 0}, "max_cost_micros"),
                          ({"max_cost_micros": 1.5}, "max_cost_micros")]:
            with self.assertRaises(InvalidInput) as cm:
                sbx(**kw)
            self.assertIn(words, cm.exception.message)

    def test_the_admin_command_mints_and_sets_limits(self) -> None:
        out = subprocess.run([PROCTOR, "admin", "token", "--db", S.db, "--course", "cs101",
                              "--scope", "instructor", "--max-live-sandboxes", "2",
                              "--daily-spend-micros", "none"],
                             check=True, capture_output=True, text=True).stdout.strip()
        listed = admin().call("GET", "/v1/tokens")["tokens"]
        row = [x for x in listed if out.startswith(x["prefix"])][0]
        self.assertEqual((row["max_live_sandboxes"], row["daily_spend_micros"]), (2, None))
        subprocess.run([PROCTOR, "admin", "token", "--db", S.db, "--course", "cs101",
                        "--set-limits", str(row["token_id"]), "--daily-spend-micros", "7"],
                       check=True, capture_output=True)
        row = [x for x in admin().call("GET", "/v1/tokens")["tokens"]
               if x["token_id"] == row["token_id"]][0]
        self.assertEqual((row["max_live_sandboxes"], row["daily_spend_micros"]), (None, 7))
        bad = subprocess.run([PROCTOR, "admin", "token", "--db", S.db, "--course", "cs101",
                              "--scope", "submit", "--max-live-sandboxes", "-3"],
                             capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--max-live-sandboxes", bad.stderr)


def main() -> int:
    global S
    if os.geteuid() != 0:
        print("test_python_capacity: needs root (sandboxes)", file=sys.stderr)
        return 77
    S = Server(PROCTOR, courses=("cs101", "other"), slots=SLOTS, prefix="proctor-pycap.")
    return run_suite(S)


if __name__ == "__main__":
    sys.exit(main())
