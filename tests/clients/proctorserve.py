"""A real `proctor serve` for the client tests and the sandbox bench: a fresh
SQLite store in a temporary directory, courses with instructor tokens, the
server's listening port read from its log, its keepers found as its
children.  Only processes this starts are ever signalled, by pid."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from typing import Dict, List, Sequence


class Server:
    """proctor serve --workers 0 --slots SLOTS, one instructor token per course."""

    def __init__(self, proctor: str, courses: Sequence[str] = ("cs101",), slots: int = 3,
                 prefix: str = "proctor-serve.", extra: Sequence[str] = ()) -> None:
        self.proctor = proctor
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.db = f"sqlite:{self.dir}/service.db"
        self.tokens: Dict[str, str] = {c: self.token(c) for c in courses}
        self.err_path = os.path.join(self.dir, "serve.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [proctor, "serve", "--listen", "127.0.0.1:0", "--db", self.db, "--workers", "0",
             "--slots", str(slots), *extra],
            stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.time() + 60
        while True:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.log())
            if m:
                self.url = f"http://127.0.0.1:{m.group(1)}"
                break
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("proctor serve did not start: " + self.log())
            time.sleep(0.05)

    def token(self, course: str, scope: str = "instructor") -> str:
        out = subprocess.run([self.proctor, "admin", "token", "--db", self.db, "--course",
                              course, "--scope", scope], check=True, capture_output=True,
                             text=True).stdout.strip()
        assert out.startswith("prt_"), out
        return out

    def log(self) -> str:
        with open(self.err_path) as f:
            return f.read()

    def keepers(self) -> List[int]:
        """The pids of serve's children: its sandbox keepers."""
        kids = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                kids.append(int(pid))
        return kids

    def wait_no_keepers(self, seconds: float = 10) -> List[int]:
        """Keepers left after `seconds` (a killed sandbox's is reaped within
        a second of serve's background loop)."""
        deadline = time.time() + seconds
        while self.keepers() and time.time() < deadline:
            time.sleep(0.2)
        return self.keepers()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.err.close()
        return rc

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def run_suite(server: "Server") -> int:
    """Run the calling test module's unittest cases against `server`, stop
    it, and print the closing line "N passed, N failed": a keeper still
    running after the tests (every sandbox was killed) and a server that
    does not exit 0 on SIGTERM count as failures.  The exit status."""
    try:
        result = unittest.main(exit=False, verbosity=2).result
    finally:
        left = server.wait_no_keepers()
        rc = server.stop()
        log = server.log()
        server.remove()
    failed = len(result.failures) + len(result.errors)
    if left:
        print(f"keepers left running after the tests: {left}")
        failed += 1
    if rc != 0:
        print(f"proctor serve exited {rc}:\n{log}")
        failed += 1
    print(f"{result.testsRun - failed} passed, {failed} failed")
    return 0 if failed == 0 else 1
