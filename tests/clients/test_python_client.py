"""The Python client (clients/python) against a real `proctor serve` holding
real jail sandboxes, on a SQLite store in a temporary directory.

Run by meson (tests/meson.build) with PROCTOR set to the built proctor and
PYTHONPATH to clients/python; needs root (sandboxes).  Prints unittest's
summary and, last, "N passed, N failed".
"""

import os
import gzip
import hashlib
import io
import select
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctorserve import Server, run_suite  # noqa: E402
from proctor_client import (Capacity, ConnectionFailed, ExecResult, InvalidInput,  # noqa: E402
                            NotFound, Sandbox, Templates, Unauthorized)

PROCTOR = os.environ.get("PROCTOR", "proctor")
SLOTS = 3


S: Server


def sbx(**kw) -> Sandbox:
    kw.setdefault("server", S.url)
    kw.setdefault("token", S.tokens["cs101"])
    return Sandbox.create(**kw)


class SandboxTests(unittest.TestCase):

    def test_create_write_exec_read_list_kill(self) -> None:
        with sbx(labels={"student": "ada"}, env={"GREETING": "hi"}) as s:
            info = s.get_info()
            self.assertEqual(info["state"], "running")
            self.assertEqual(info["labels"], {"student": "ada"})
            self.assertEqual(s.files.write("/work/sub/hello.py", "print(6 * 7)\n"), 13)
            r = s.exec(["python3", "sub/hello.py"])
            self.assertIsInstance(r, ExecResult)
            self.assertEqual((r.status, r.exit_code, r.stdout), ("ok", 0, "42\n"))
            self.assertFalse(r.timed_out)
            self.assertIn("cpu_ms", r.usage)
            # The sandbox's env, a command run by sh -c, a cwd, stdin.
            r = s.exec("echo $GREETING; pwd", cwd="/work/sub")
            self.assertEqual(r.stdout, "hi\n/work/sub\n")
            r = s.exec(["cat"], stdin=b"from stdin")
            self.assertEqual(r.stdout, "from stdin")
            # A file written by a command is read back, and listed.
            s.exec(["sh", "-c", "printf 'x%.0s' $(seq 1 5000) > /work/out.txt"])
            self.assertEqual(s.files.read("/work/out.txt"), b"x" * 5000)
            listing = s.files.list("/work")
            self.assertFalse(listing.truncated)
            names = {e.name: e for e in listing}
            self.assertEqual(names["out.txt"].type, "file")
            self.assertEqual(names["out.txt"].size, 5000)
            self.assertEqual(names["sub"].type, "dir")
            # Binary bytes cross intact.
            blob = bytes(range(256)) * 40
            s.files.write("/tmp/blob.bin", blob)
            self.assertEqual(s.files.read("/tmp/blob.bin"), blob)
            sid = s.id
            # Every command is on record, with its verdict and usage.
            execs = s.execs()
            self.assertEqual(len(execs), 4)
            self.assertEqual(execs[0]["argv"], ["python3", "sub/hello.py"])
            self.assertEqual((execs[0]["state"], execs[0]["status"], execs[0]["exit_code"]),
                             ("done", "ok", 0))
        # Killed: exec and read say so; its record stays.
        self.assertEqual(len(Sandbox.connect(sid, server=S.url,
                                             token=S.tokens["cs101"]).execs()), len(execs))
        gone = Sandbox.connect(sid, server=S.url, token=S.tokens["cs101"])
        self.assertEqual(gone.get_info()["state"], "deleted")
        with self.assertRaises(NotFound):
            gone.exec(["true"])

    def test_timeout_kills_everything_it_started(self) -> None:
        with sbx() as s:
            r = s.exec("sleep 300 & sleep 300", timeout_ms=500)
            self.assertTrue(r.timed_out)
            self.assertEqual(r.status, "timeout")
            self.assertEqual(r.limit, "wall")
            # Nothing of it runs on: the next command sees no sleep.
            r = s.exec("cat /proc/[0-9]*/comm | grep -c '^sleep$' || true")
            self.assertEqual(r.stdout.strip(), "0", r)

    def test_limits_end_in_their_verdicts(self) -> None:
        with sbx(memory_mib=64) as s:
            r = s.exec(["python3", "-c", "x = bytearray(512 << 20); print(len(x))"])
            self.assertEqual(r.status, "memory_limit", r)
            # A fork bomb meets the process limit while its shell waits.
            r = s.exec(["sh", "-c", "f() { f | f & }; f; sleep 1"], pids=32, timeout_ms=5000)
            self.assertIn("pids", r.limits_hit, r)
            r = s.exec(["sh", "-c", "yes flood"], max_output_bytes=4096, timeout_ms=5000)
            self.assertTrue(r.stdout_truncated)
            self.assertLessEqual(len(r.stdout.encode()), 4096)
            self.assertGreater(r.stdout_bytes, 4096)
            # Still usable after all of it.
            self.assertEqual(s.exec(["echo", "alive"]).stdout, "alive\n")

    def test_bad_input_is_refused_with_a_code(self) -> None:
        with sbx() as s:
            for path in ("/work/../etc/passwd", "/etc/passwd", "relative/../../x"):
                with self.assertRaises(InvalidInput, msg=path):
                    s.files.write(path, "x")
            # A symlink the sandbox's own program planted is never followed.
            s.exec(["ln", "-s", "/etc/shadow", "/work/link"])
            with self.assertRaises(InvalidInput):
                s.files.read("/work/link")
            with self.assertRaises(NotFound):
                s.files.read("/work/nothing-here")
            with self.assertRaises(InvalidInput):
                s._c.call("POST", s._path("/exec"), {"argv": "ls -l"})
            with self.assertRaises(InvalidInput):
                s._c.call("POST", s._path("/exec"), {"argv": ["ls", 1]})
            with self.assertRaises(InvalidInput):
                s._c.call("POST", s._path("/exec"), {"argv": ["true"], "command": "true"})
        with self.assertRaises(NotFound):
            Sandbox.connect(999999, server=S.url, token=S.tokens["cs101"])
        with self.assertRaises(Unauthorized):
            Sandbox.create(server=S.url, token="prt_" + "0" * 80)

    def test_another_course_sees_nothing(self) -> None:
        with sbx() as s:
            with self.assertRaises(NotFound):
                Sandbox.connect(s.id, server=S.url, token=S.tokens["other"])
            # A second client of the same course drives the same sandbox.
            s.files.write("/work/shared.txt", "shared")
            other = Sandbox.connect(s.id, server=S.url, token=S.tokens["cs101"])
            self.assertEqual(other.exec(["cat", "shared.txt"]).stdout, "shared")
            listed = [x["id"] for x in Sandbox.list(server=S.url, token=S.tokens["cs101"])]
            self.assertIn(s.id, listed)
            self.assertNotIn(s.id, [x["id"] for x in Sandbox.list(server=S.url,
                                                                   token=S.tokens["other"])])

    def test_lease_ends_the_sandbox_with_no_client(self) -> None:
        s = sbx(timeout_seconds=2)
        s.files.write("/work/a", "a")
        deadline = time.time() + 30
        while s.get_info()["state"] == "running" and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(s.get_info()["state"], "expired")
        with self.assertRaises(NotFound):
            s.exec(["true"])

    def test_more_creates_than_slots_is_capacity(self) -> None:
        held = [sbx() for _ in range(SLOTS)]
        try:
            with self.assertRaises(Capacity) as cm:
                sbx()
            self.assertGreater(cm.exception.retry_after or 0, 0)
            # The gauge counts running keepers: the refused one's, and an
            # earlier test's killed ones, are gone within moments.
            import urllib.request
            deadline = time.time() + 10
            while True:
                with urllib.request.urlopen(S.url + "/metrics", timeout=30) as r:
                    text = r.read().decode()
                if f"proctor_sandboxes_live {SLOTS}\n" in text or time.time() > deadline:
                    break
                time.sleep(0.2)
            self.assertIn(f"proctor_sandboxes_live {SLOTS}\n", text)
            self.assertRegex(text, r"proctor_sandbox_creates_refused_capacity_total [1-9]")
            # Creates and execs answered so far are in the latency histograms.
            self.assertRegex(text, r'proctor_sandbox_seconds_count\{op="create"\} [1-9]')
            self.assertRegex(text, r'proctor_sandbox_seconds_count\{op="exec"\} [1-9]')
            self.assertIn('proctor_sandbox_seconds_bucket{op="exec",le="+Inf"}', text)
        finally:
            for s in held:
                s.kill()
        # The slots are free again.
        with sbx() as s:
            self.assertEqual(s.exec(["true"]).exit_code, 0)

    def test_a_killed_keeper_is_lost_and_its_slot_free(self) -> None:
        s = sbx()
        before = set(S.keepers())
        self.assertTrue(before)
        info = s.get_info()
        self.assertEqual(info["state"], "running")
        # Kill this sandbox's keeper (serve's child, spawned for it).
        for pid in before:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f"/{s.id}.sock".encode() in f.read():
                    os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 30
        while s.get_info()["state"] == "running" and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(s.get_info()["state"], "lost")
        held = [sbx() for _ in range(SLOTS)]
        for h in held:
            h.kill()


class ExecEdgeTests(unittest.TestCase):

    def test_text_stdin_and_scripts_keep_their_newlines(self) -> None:
        with sbx() as s:
            r = s._c.call("POST", s._path("/exec"), {"argv": ["cat"], "stdin": "1\n2\t3\n"})
            self.assertEqual(r["stdout"], "1\n2\t3\n")
            self.assertEqual(s.exec("echo a\necho b").stdout, "a\nb\n")

    def test_a_client_that_leaves_still_has_its_exec_recorded(self) -> None:
        with sbx() as s:
            with self.assertRaises(Exception):
                s._c.call("POST", s._path("/exec"), {"argv": ["sleep", "2"]}, timeout=0.5)
            deadline = time.time() + 20
            while s.get_info()["usage"]["execs"] < 1 and time.time() < deadline:
                time.sleep(0.2)
            self.assertEqual(s.get_info()["usage"]["execs"], 1)

    def test_delete_during_an_exec_ends_it(self) -> None:
        import threading
        s = sbx()
        got: dict = {}

        def run() -> None:
            try:
                got["r"] = s.exec(["sleep", "30"], timeout_ms=60_000)
            except Exception as err:  # the answer of an exec cut by a delete
                got["err"] = err

        t = threading.Thread(target=run)
        t.start()
        time.sleep(1.0)
        s.kill()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(got.get("err"), NotFound, got)
        self.assertEqual(s.get_info()["state"], "deleted")


class FileTreeTests(unittest.TestCase):
    """Files anywhere outside the system's directories, trees as one tar."""

    def test_a_grading_loop_writes_where_it_likes_outside_the_system(self) -> None:
        with sbx() as s:
            s.files.write("/workspace/submission/solution.py", "def add(a, b):\n    return a + b\n")
            s.files.write("/grader/test_hidden.py",
                          "import sys\nsys.path.insert(0, '/workspace/submission')\n"
                          "import solution\nassert solution.add(2, 3) == 5\n"
                          "open('/workspace/report.txt', 'w').write('passed')\n")
            r = s.exec(["python3", "/grader/test_hidden.py"], cwd="/workspace/submission")
            self.assertEqual((r.status, r.exit_code), ("ok", 0), r.stderr)
            self.assertEqual(s.files.read("/workspace/report.txt"), b"passed")
            self.assertEqual({e.name for e in s.files.list("/workspace")},
                             {"submission", "report.txt"})
            # The program sees its own directories, and the system's read-only.
            r = s.exec("ls -d /workspace /grader && touch /usr/x /etc/x /newtop 2>&1; true")
            self.assertIn("/grader\n/workspace\n", r.stdout)
            self.assertEqual(r.stdout.count("Read-only file system")
                             + r.stdout.count("Permission denied"), 3, r.stdout)
            for bad in ("/usr/lib/x.py", "/etc/passwd", "/lib64/x", "/proc/1/x", "/",
                        "/var/x", "/grader/../etc/x"):
                with self.assertRaises(InvalidInput, msg=bad):
                    s.files.write(bad, "x")
            # A top-level directory made after the sandbox ran something is
            # there in the next command too.
            s.files.write("/autograder/source/run", "#!/bin/sh\necho graded\n", executable=True)
            self.assertEqual(s.exec(["/autograder/source/run"]).stdout, "graded\n")

    def test_upload_and_download_a_tree_as_one_stream(self) -> None:
        with tempfile.TemporaryDirectory() as d, sbx() as s:
            src = os.path.join(d, "src")
            os.makedirs(os.path.join(src, "pkg", "deep", "er"))
            os.makedirs(os.path.join(src, "empty"))
            with open(os.path.join(src, "main.py"), "w") as f:
                f.write("print('main')\n")
            with open(os.path.join(src, "pkg", "deep", "er", "data.bin"), "wb") as f:
                f.write(os.urandom(3 << 20))  # 3 MiB, past any small threshold
            with open(os.path.join(src, "run.sh"), "w") as f:
                f.write("#!/bin/sh\necho ran\n")
            os.chmod(os.path.join(src, "run.sh"), 0o755)
            self.assertEqual(s.files.upload(src, "/workspace/sub"), 3)
            self.assertEqual(s.exec(["./run.sh"], cwd="/workspace/sub").stdout, "ran\n")
            r = s.exec("cd /workspace/sub && sha256sum pkg/deep/er/data.bin && test -d empty")
            self.assertEqual(r.exit_code, 0, "an empty directory is uploaded too")
            with open(os.path.join(src, "pkg", "deep", "er", "data.bin"), "rb") as f:
                want = hashlib.sha256(f.read()).hexdigest()
            self.assertIn(want, r.stdout)
            # A second upload into the same directory adds to it.
            os.remove(os.path.join(src, "main.py"))
            with open(os.path.join(src, "more.txt"), "w") as f:
                f.write("more")
            s.files.upload(src, "/workspace/sub")
            self.assertTrue(s.files.exists("/workspace/sub/main.py"))
            # Download: the same bytes and modes; what the program made too.
            s.exec("echo out > /workspace/sub/made.txt && ln -s /etc/passwd /workspace/sub/link")
            dst = os.path.join(d, "back")
            self.assertEqual(s.files.download("/workspace/sub", dst), 5)
            with open(os.path.join(dst, "pkg", "deep", "er", "data.bin"), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), want)
            self.assertTrue(os.access(os.path.join(dst, "run.sh"), os.X_OK))
            self.assertFalse(os.path.lexists(os.path.join(dst, "link")))
            with open(os.path.join(dst, "made.txt")) as f:
                self.assertEqual(f.read(), "out\n")
            self.assertTrue(os.path.isdir(os.path.join(dst, "empty")))
            # A name longer than ustar holds crosses both ways (pax).
            deep = "/".join(["d" * 60] * 5) + "/" + "n" * 120 + ".txt"
            s.files.write("/workspace/long/" + deep, "long")
            back = os.path.join(d, "long")
            s.files.download("/workspace/long", back)
            with open(os.path.join(back, deep)) as f:
                self.assertEqual(f.read(), "long")
            with self.assertRaises(InvalidInput):
                s.files.download("/workspace/sub/made.txt", dst)
            with self.assertRaises(NotFound):
                s.files.download("/workspace/nothing", dst)

    def _put_raw(self, s: Sandbox, data: bytes, path: str = "/workspace/x") -> None:
        s._c.call("PUT", s._path("/archive"), query={"path": path}, raw=data,
                  raw_type="application/x-tar")

    def test_a_hostile_archive_is_refused_and_changes_nothing(self) -> None:
        def tar_of(*members) -> bytes:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as t:
                for info, data in members:
                    t.addfile(info, io.BytesIO(data) if data is not None else None)
            return buf.getvalue()

        def entry(name: str, kind=tarfile.REGTYPE, data: bytes = b"", link: str = ""):
            i = tarfile.TarInfo(name)
            i.type, i.size, i.linkname = kind, len(data) if kind == tarfile.REGTYPE else 0, link
            return i, data if kind == tarfile.REGTYPE else None

        with sbx(disk_mib=8) as s:
            hostile = {
                "symlink out": tar_of(entry("ok.txt", data=b"x"),
                                      entry("evil", tarfile.SYMTYPE, link="/etc/passwd")),
                "hard link": tar_of(entry("a", data=b"x"),
                                    entry("b", tarfile.LNKTYPE, link="a")),
                "dot dot": tar_of(entry("../../escape.txt", data=b"x")),
                "absolute": tar_of(entry("/tmp/abs.txt", data=b"x")),
                "fifo": tar_of(entry("pipe", tarfile.FIFOTYPE)),
                "device": tar_of(entry("dev", tarfile.CHRTYPE)),
                "not an archive": b"this is not a tar file at all" * 10,
            }
            for what, data in hostile.items():
                with self.assertRaises(InvalidInput, msg=what):
                    self._put_raw(s, data)
            self.assertFalse(s.files.exists("/workspace/x"))
            self.assertFalse(s.files.exists("/workspace/x/ok.txt"))
            # A bomb: 64 MiB of zeros in a few KiB, against an 8 MiB disk.
            raw = io.BytesIO()
            with tarfile.open(fileobj=raw, mode="w") as t:
                i = tarfile.TarInfo("zeros")
                i.size = 64 << 20
                t.addfile(i, io.BytesIO(bytes(64 << 20)))
            bomb = gzip.compress(raw.getvalue())
            self.assertLess(len(bomb), 1 << 20)
            with self.assertRaises(InvalidInput):
                self._put_raw(s, bomb)
            self.assertFalse(s.files.exists("/workspace/x"))
            # The sandbox still works, and nothing landed on the host.
            self.assertEqual(s.exec(["true"]).status, "ok")
            self.assertFalse(os.path.lexists("/escape.txt"))

    def test_remove_make_dir_stat(self) -> None:
        with sbx() as s:
            s.files.make_dir("/workspace/a/b/c")
            s.files.make_dir("/workspace/a/b/c")  # again: fine
            st = s.files.stat("/workspace/a/b")
            self.assertEqual((st.name, st.type), ("b", "dir"))
            self.assertTrue(s.files.exists("/workspace"))
            self.assertTrue(s.files.exists("/work"))
            self.assertIsNone(s.files.stat("/workspace/nothing"))
            s.files.write("/workspace/a/b/c/f.txt", "f")
            self.assertEqual(s.files.stat("/workspace/a/b/c/f.txt").size, 1)
            with self.assertRaises(InvalidInput):
                s.files.make_dir("/workspace/a/b/c/f.txt/sub")
            with self.assertRaises(InvalidInput):
                s.files.remove("/workspace/a")  # not empty
            # A link the program planted goes; its target stays.
            s.exec(["ln", "-s", "/workspace/a/b/c/f.txt", "/work/link"])
            self.assertEqual(s.files.stat("/work/link").type, "link")
            s.files.remove("/work/link")
            self.assertFalse(s.files.exists("/work/link"))
            self.assertTrue(s.files.exists("/workspace/a/b/c/f.txt"))
            # A link on the way is never followed.
            s.exec(["ln", "-s", "/workspace/a", "/work/via"])
            with self.assertRaises(InvalidInput):
                s.files.remove("/work/via/b/c/f.txt")
            s.files.remove("/workspace/a", recursive=True)
            self.assertFalse(s.files.exists("/workspace/a"))
            with self.assertRaises(NotFound):
                s.files.remove("/workspace/a")
            with self.assertRaises(InvalidInput):
                s.files.remove("/work")


class TemplateTests(unittest.TestCase):
    """A prepared sandbox kept as name@N, and sandboxes started from it."""

    def test_snapshot_and_create_from_the_template(self) -> None:
        with sbx() as s:
            s.files.write("/workspace/tests/test_hidden.py", "assert True\n")
            s.files.write("/work/run.sh", "#!/bin/sh\necho prepared\n", executable=True)
            s.exec("mkdir -p /work/cache && echo built > /work/cache/out.txt && "
                   "ln -s /etc/passwd /work/cache/link && mkfifo /work/cache/fifo")
            t1 = s.snapshot("hw3")
            self.assertEqual((t1["name"], t1["version"], t1["template"]), ("hw3", 1, "hw3@1"))
            self.assertEqual(t1["source_sandbox_id"], s.id)
            s.files.write("/work/later.txt", "later")
            t2 = s.snapshot("hw3")
            self.assertEqual(t2["template"], "hw3@2")
            self.assertNotEqual(t1["digest"], t2["digest"])
        with sbx(template="hw3@1") as a:
            self.assertEqual(a.exec(["/work/run.sh"]).stdout, "prepared\n")
            self.assertEqual(a.files.read("/work/cache/out.txt"), b"built\n")
            self.assertTrue(a.files.exists("/workspace/tests/test_hidden.py"))
            self.assertFalse(a.files.exists("/work/later.txt"))
            # Links and special files are not kept.
            self.assertFalse(a.files.exists("/work/cache/link"))
            self.assertFalse(a.files.exists("/work/cache/fifo"))
            # Its files are the program's to change.
            self.assertEqual(a.exec("echo x >> /work/cache/out.txt && "
                                    "echo y > /workspace/tests/new.txt").status, "ok")
        with sbx(template="hw3") as b:  # the latest
            self.assertEqual(b.files.read("/work/later.txt"), b"later")
        names = {t["template"] for t in Templates.list(server=S.url, token=S.tokens["cs101"])}
        self.assertTrue({"hw3@1", "hw3@2"} <= names)
        # Another course sees none of them.
        self.assertNotIn("hw3@1", {t["template"] for t in
                                   Templates.list(server=S.url, token=S.tokens["other"])})
        with self.assertRaises(NotFound):
            sbx(template="hw3@1", token=S.tokens["other"])
        Templates.remove(t1["id"], server=S.url, token=S.tokens["cs101"])
        with self.assertRaises(NotFound):
            sbx(template="hw3@1")
        with self.assertRaises(NotFound):
            Templates.remove(t1["id"], server=S.url, token=S.tokens["cs101"])
        # A removed version is never given again.
        with sbx() as s:
            self.assertEqual(s.snapshot("hw3")["version"], 3)
        for bad in ("Bad Name", "../x", "a@0", "hw3@x", "@1"):
            with self.assertRaises(InvalidInput, msg=bad):
                sbx(template=bad).kill()


class ClockTests(unittest.TestCase):
    """The lease and the idle timeout, each its own clock."""

    def test_set_timeout_shortens_and_extends_the_lease(self) -> None:
        s = sbx(timeout_seconds=2)
        s.set_timeout(300)
        time.sleep(3)
        self.assertEqual(s.get_info()["state"], "running")
        s.set_timeout(1)
        deadline = time.time() + 20
        while s.get_info()["state"] == "running" and time.time() < deadline:
            time.sleep(0.3)
        self.assertEqual(s.get_info()["state"], "expired")
        with self.assertRaises(NotFound):
            s.set_timeout(10)

    def test_idle_timeout_ends_a_sandbox_nobody_uses(self) -> None:
        s = sbx(idle_timeout_seconds=2)
        # A command longer than the idle timeout is not idleness.
        r = s.exec(["sleep", "3"])
        self.assertEqual(r.status, "ok")
        self.assertEqual(s.exec(["true"]).status, "ok")
        deadline = time.time() + 20
        while s.get_info()["state"] == "running" and time.time() < deadline:
            time.sleep(0.3)
        info = s.get_info()
        self.assertEqual(info["state"], "expired")
        self.assertIn("idle", info.get("end_reason") or "")


class IdleProxy:
    """A TCP proxy on loopback that cuts a connection after `idle` seconds
    with no byte either way, as load balancers and reverse proxies do."""

    def __init__(self, upstream: str, idle: float) -> None:
        host, port = upstream.rsplit("//", 1)[1].split("/")[0].split(":")
        self.upstream = (host, int(port))
        self.idle = idle
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._pump, args=(c,), daemon=True).start()

    def _pump(self, c: socket.socket) -> None:
        u = socket.create_connection(self.upstream)
        try:
            while True:
                r, _, _ = select.select([c, u], [], [], self.idle)
                if not r:
                    self.cuts += 1
                    return
                for a in r:
                    data = a.recv(65536)
                    if not data:
                        return
                    (u if a is c else c).sendall(data)
        finally:
            c.close()
            u.close()

    def close(self) -> None:
        self.sock.close()


class StreamTests(unittest.TestCase):
    """Output as it is produced, and keepalives through an idle proxy."""

    def test_output_arrives_as_it_is_produced(self) -> None:
        with sbx() as s:
            got: list = []
            t0 = time.time()
            r = s.exec("echo first; sleep 1.5; echo second >&2; printf 'h\\303'; "
                       "sleep 0.2; printf '\\251llo\\n'",
                       on_stdout=lambda t: got.append(("out", t, time.time() - t0)),
                       on_stderr=lambda t: got.append(("err", t, time.time() - t0)))
            done = time.time() - t0
            self.assertEqual(r.status, "ok")
            # A character split across two writes reaches the callbacks whole.
            self.assertEqual(r.stdout, "first\nh\u00e9llo\n")
            self.assertEqual("".join(t for k, t, _ in got if k == "out"), r.stdout)
            self.assertEqual("".join(t for k, t, _ in got if k == "err"), "second\n")
            # "first" came a second and more before the command ended.
            first = next(at for k, t, at in got if k == "out")
            self.assertLess(first, done - 1.0, got)

    def test_keepalive_is_for_a_stream_only(self) -> None:
        with sbx() as s:
            with self.assertRaises(InvalidInput) as cm:
                s._c.call("POST", s._path("/exec"), {"argv": ["true"], "keepalive_ms": 500})
            self.assertIn("keepalive_ms", cm.exception.message)

    def test_a_flood_streams_no_more_than_the_cap(self) -> None:
        with sbx() as s:
            n = [0]
            r = s.exec("yes | head -c 5000000", max_output_bytes=100_000,
                       on_stdout=lambda t: n.__setitem__(0, n[0] + len(t)))
            self.assertEqual(r.status, "ok")
            self.assertTrue(r.stdout_truncated)
            self.assertEqual(n[0], 100_000)
            self.assertEqual(r.stdout_bytes, 5_000_000)

    def test_a_quiet_stream_outlives_an_idle_proxy(self) -> None:
        proxy = IdleProxy(S.url, idle=1.0)
        try:
            with sbx() as s:
                far = Sandbox.connect(s.id, server=proxy.url, token=S.tokens["cs101"])
                seen: list = []
                r = far.exec("sleep 3; echo done", on_stdout=seen.append, keepalive_ms=300)
                self.assertEqual((r.status, r.stdout, "".join(seen)), ("ok", "done\n", "done\n"))
                self.assertEqual(proxy.cuts, 0)
                # Without a stream the same wait is cut by the proxy.
                with self.assertRaises(ConnectionFailed):
                    far.exec("sleep 3; echo done")
                self.assertGreaterEqual(proxy.cuts, 1)
                # ...and that command still ran to its end, on record.
                deadline = time.time() + 20
                while time.time() < deadline:
                    last = s.execs()[-1]
                    if last["state"] == "done":
                        break
                    time.sleep(0.3)
                self.assertEqual((last["state"], last["status"]), ("done", "ok"))
        finally:
            proxy.close()

    def test_a_stream_of_an_ended_sandbox_says_why(self) -> None:
        s = sbx()
        errors: list = []

        def kill_soon() -> None:
            time.sleep(1.0)
            try:
                Sandbox.connect(s.id, server=S.url, token=S.tokens["cs101"]).kill()
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threading.Thread(target=kill_soon).start()
        with self.assertRaises(NotFound) as cm:
            s.exec("echo up; sleep 30", on_stdout=lambda t: None)
        self.assertIn("deleted", cm.exception.message)
        self.assertEqual(errors, [])


class CommandLineTests(unittest.TestCase):
    """proctor sandbox run|exec|ls|kill, the same server."""

    def run_proctor(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PROCTOR_SERVER=S.url, PROCTOR_TOKEN=S.tokens["cs101"])
        return subprocess.run([PROCTOR, "sandbox", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    def test_run_passes_output_and_exit_status_through(self) -> None:
        r = self.run_proctor("run", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (3, "out\n", "err\n"))
        r = self.run_proctor("run", "--timeout-ms", "300", "--", "sleep", "30")
        self.assertEqual(r.returncode, 128 + 9, r)
        self.assertIn("timeout", r.stderr)
        # Each run's sandbox is gone after it.
        self.assertEqual(self.run_proctor("ls").stdout, "")

    def test_run_from_a_template_and_wait_for_room(self) -> None:
        with sbx() as s:
            s.files.write("/grader/answer.txt", "42\n")
            s.snapshot("cli-tmpl")
        r = self.run_proctor("run", "--template", "cli-tmpl", "--wait-ms", "5000", "--",
                             "cat", "/grader/answer.txt")
        self.assertEqual((r.returncode, r.stdout), (0, "42\n"), r.stderr)
        r = self.run_proctor("run", "--template", "no-such-template", "--", "true")
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("no-such-template", r.stderr)
        self.assertEqual(self.run_proctor("ls").stdout, "")

    def test_exec_ls_and_kill_a_live_sandbox(self) -> None:
        s = sbx()
        self.addCleanup(lambda: s.get_info()["state"] == "running" and s.kill())
        r = self.run_proctor("ls")
        self.assertIn(f"{s.id} running", r.stdout)
        r = self.run_proctor("exec", str(s.id), "--", "sh", "-c", "echo hi > f; cat f")
        self.assertEqual((r.returncode, r.stdout), (0, "hi\n"))
        self.assertEqual(self.run_proctor("kill", str(s.id)).returncode, 0)
        self.assertEqual(s.get_info()["state"], "deleted")
        r = self.run_proctor("exec", str(s.id), "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not_found", r.stderr)
        self.assertEqual(self.run_proctor("exec", "nope", "--", "true").returncode, 2)


def main() -> int:
    global S
    if os.geteuid() != 0:
        print("test_python_client: needs root (sandboxes)", file=sys.stderr)
        return 77
    S = Server(PROCTOR, courses=("cs101", "other"), slots=SLOTS, prefix="proctor-pyclient.")
    return run_suite(S)


if __name__ == "__main__":
    sys.exit(main())
