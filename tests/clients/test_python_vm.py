"""The sandbox API on the microVM backend: the Python client against a real
`proctor serve` whose sandboxes are QEMU guests of the small image (under
TCG here, so a subset of test_python_client's cases).

Run by meson in the `vm` suite (tests/meson.build) with PROCTOR set to the
built proctor, PROCTOR_STATE_DIR to the VM suite's state directory (where
test_vm builds images/small.yaml; built here if it is missing) and
PYTHONPATH to clients/python; needs root and QEMU.  Prints unittest's
summary and, last, "N passed, N failed".
"""

import glob
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctorserve import Server, run_suite  # noqa: E402
from proctor_client import InvalidInput, Sandbox, Unavailable  # noqa: E402

PROCTOR = os.environ.get("PROCTOR", "proctor")
STATE = os.environ.get("PROCTOR_STATE_DIR", "/var/lib/proctor-vmtest")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

S: Server
PIN = ""


def small_image() -> str:
    """small@N in STATE, built from images/small.yaml when there is none."""
    def newest() -> str:
        versions = [int(os.path.basename(p)) for p in glob.glob(os.path.join(STATE, "images",
                                                                         "small", "[0-9]*"))]
        return f"small@{max(versions)}" if versions else ""
    pin = newest()
    if not pin:
        subprocess.run([PROCTOR, "image", "build", "--state-dir", STATE,
                        os.path.join(ROOT, "images", "small.yaml")], check=True, timeout=1800)
        pin = newest()
    return pin


def vm(**kw) -> Sandbox:
    kw.setdefault("server", S.url)
    kw.setdefault("token", S.tokens["cs101"])
    kw.setdefault("isolation", "vm")
    kw.setdefault("image", PIN)
    return Sandbox.create(**kw)


class VmSandboxTests(unittest.TestCase):

    def test_files_and_commands_in_a_guest(self) -> None:
        with vm(memory_mib=512, disk_mib=64) as s:
            self.assertEqual(s.get_info()["isolation"], "vm")
            s.files.write("/work/hello.py", "import sys\nprint(sys.stdin.read().upper())\n")
            r = s.exec(["python3", "hello.py"], stdin="guest")
            self.assertEqual((r.status, r.exit_code, r.stdout), ("ok", 0, "GUEST\n"), r.stderr)
            # The guest's own kernel: its processes are not the host's.
            r = s.exec(["sh", "-c", "ls /proc | grep -c '^[0-9]'"])
            self.assertEqual(r.status, "ok", r.stderr)
            self.assertLess(int(r.stdout), 50)
            s.exec("echo made > /work/out.txt")
            self.assertEqual(s.files.read("/work/out.txt"), b"made\n")
            # A command past its time is killed, and says so.
            r = s.exec(["sleep", "60"], timeout_ms=1500)
            self.assertTrue(r.timed_out)
            self.assertEqual(r.status, "timeout")
            # What the guest cannot do yet is refused with a reason.
            with self.assertRaises(Unavailable):
                s.files.write("/grader/t.py", "x")
            sid = s.id
        self.assertEqual(Sandbox.connect(sid, server=S.url,
                                         token=S.tokens["cs101"]).get_info()["state"], "deleted")

    def test_a_vm_needs_an_image(self) -> None:
        with self.assertRaises(InvalidInput):
            vm(image=None).kill()


def main() -> int:
    global S, PIN
    if os.geteuid() != 0:
        print("test_python_vm: needs root (sandboxes)", file=sys.stderr)
        return 77
    if not os.access("/usr/bin/qemu-system-x86_64", os.X_OK):
        print("test_python_vm: QEMU is not installed", file=sys.stderr)
        return 77
    PIN = small_image()
    S = Server(PROCTOR, courses=("cs101",), slots=2, prefix="proctor-pyvm.",
               extra=("--state-dir", STATE))
    return run_suite(S)


if __name__ == "__main__":
    sys.exit(main())
