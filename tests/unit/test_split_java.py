#!/usr/bin/python3
"""The JUnit split runtime's harness against a hostile program side
(src/grade/runtimes/java/, docs/split-protocol.md "Java").

The harness JVM runs here, outside any sandbox, with its channel on fd 0
as the sandbox gives it; the program side is this script, answering with
what a submission that rewrote Proctor's program side could send: code in
type names, class names of the tests' libraries, messages that are not
JSON or not the protocol's, and mutations of a valid description.  The
harness must end with one of the statuses grade.c reads (70 protocol,
72 names the tests use, 73 cannot stand in) or the launcher's own 0/1,
never hang, and never print a raw stack trace.  One honest run (a real
program side JVM, a one-method submission, the JUnit console launcher)
passes its test.

    /usr/bin/python3 tests/unit/test_split_java.py

Needs javac and Debian's junit5 (the launcher jar); without them every
test is skipped unless PROCTOR_MUST_WORK=1.
"""
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src", "grade", "runtimes", "java", "proctor", "split")
JAR = "/usr/share/java/junit-platform-console-standalone.jar"
MUST = os.environ.get("PROCTOR_MUST_WORK") == "1"
SWAP = 'exec 4<&0 0<&3 3<&4 4<&-; exec "$@"'
RUNTIME = None


def setUpModule():
    global RUNTIME
    if not shutil.which("javac") or not os.path.exists(JAR):
        if MUST:
            raise RuntimeError("javac or %s missing, and PROCTOR_MUST_WORK=1" % JAR)
        raise unittest.SkipTest("no javac or JUnit launcher")
    RUNTIME = tempfile.mkdtemp(prefix="proctor-java-rt-")
    sources = sorted(os.path.join(SRC, f) for f in os.listdir(SRC) if f.endswith(".java"))
    subprocess.run(["javac", "--release", "17", "-proc:none", "-encoding", "UTF-8", "-d", RUNTIME] + sources,
                   check=True)


def tearDownModule():
    if RUNTIME:
        shutil.rmtree(RUNTIME, ignore_errors=True)


def frame(obj):
    body = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
    return struct.pack(">I", len(body)) + body


def read_msg(sock):
    head = b""
    while len(head) < 4:
        k = sock.recv(4 - len(head))
        if not k:
            return None
        head += k
    n = struct.unpack(">I", head)[0]
    body = b""
    while len(body) < n:
        k = sock.recv(n - len(body))
        if not k:
            return None
        body += k
    return json.loads(body)


def start(argv, fd, cwd):
    """argv under the sandbox's SWAP with the socket `fd` on the child's fd 3."""
    hi = os.dup(fd)
    try:
        return subprocess.Popen(["sh", "-c", SWAP, "sh"] + argv, cwd=cwd, pass_fds=[hi, 3] if hi != 3 else [3],
                                preexec_fn=lambda: os.dup2(hi, 3) if hi != 3 else None,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        os.close(hi)


class Work:
    """A working directory with one hidden test source, as the sandbox's /work."""

    def __init__(self, test_source):
        self.dir = tempfile.mkdtemp(prefix="proctor-java-work-")
        with open(os.path.join(self.dir, "SolutionTest.java"), "w") as f:
            f.write(test_source)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


TEST_SOURCE = """import static org.junit.jupiter.api.Assertions.assertEquals;
import org.junit.jupiter.api.*;
class SolutionTest {
    @Test void adds() { assertEquals(5, Solution.add(2, 3)); }
}
"""

GOOD = [{
    "name": "Solution", "simple": "Solution", "package": "", "kind": "class", "access": "public",
    "abstract": False, "typeParams": [], "superKind": "object", "interfaces": [], "ctors": [],
    "methods": [{"access": "public", "params": [["int", "int"], ["int", "int"]], "varargs": False,
                 "throws": [], "typeParams": [], "name": "add", "static": True, "abstract": False,
                 "default": False, "returns": "int"}],
    "fields": [], "constants": [], "nested": [],
}]


def run_harness(answer, timeout=60):
    """Run the harness with this script as its program side: hello, then
    `answer(request)` for each request (a dict, bytes to send raw, or None
    to close).  Returns (status, stderr)."""
    w = Work(TEST_SOURCE)
    a, b = socket.socketpair()
    try:
        h = start(["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", RUNTIME + ":" + JAR,
                   "proctor.split.ProctorSplit", "harness", "--class-path", "classes", "--select-class",
                   "SolutionTest", "--disable-banner", "--details=none"], a.fileno(), w.dir)
        a.close()

        def side():
            try:
                b.sendall(frame({"ready": True}))
                while True:
                    req = read_msg(b)
                    if req is None:
                        return
                    out = answer(req)
                    if out is None:
                        return
                    b.sendall(out if isinstance(out, bytes) else frame(out))
            except (OSError, ValueError):
                return
            finally:
                b.close()

        t = threading.Thread(target=side, daemon=True)
        t.start()
        try:
            _, err = h.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            h.kill()
            h.communicate()
            raise AssertionError("the harness hung")
        return h.returncode, err.decode(errors="replace")
    finally:
        w.close()


def classes_answer(value):
    def answer(req):
        if req.get("op") == "classes":
            return {"re": req["n"], "ok": value}
        return None
    return answer


class HostileProgramSide(unittest.TestCase):
    def check(self, answer, statuses):
        status, err = run_harness(answer)
        self.assertIn(status, statuses, err[-2000:])
        self.assertNotIn("Exception in thread", err, err[-2000:])
        return err

    def test_no_hello_is_not_started(self):
        a, b = socket.socketpair()
        w = Work(TEST_SOURCE)
        try:
            h = start(["java", "-cp", RUNTIME + ":" + JAR, "proctor.split.ProctorSplit", "harness"],
                      a.fileno(), w.dir)
            a.close()
            b.close()
            _, err = h.communicate(timeout=60)
            self.assertEqual(h.returncode, 71, err)
        finally:
            w.close()

    def test_code_in_a_type_is_refused(self):
        for bad in ["int x; static { System.exit(0); } int", "int/*", "java.lang.Object\n@Deprecated",
                    "int) { return 1; } int f(", "\"s\""]:
            d = json.loads(json.dumps(GOOD))
            d[0]["methods"][0]["returns"] = bad
            self.check(classes_answer(d), {70})

    def test_code_in_an_erased_type_is_refused(self):
        d = json.loads(json.dumps(GOOD))
        d[0]["methods"][0]["params"][0][1] = "int.class, java.lang.System.out"
        self.check(classes_answer(d), {70})

    def test_names_the_tests_use_are_refused(self):
        for name, pkg, simple in [("org.junit.jupiter.api.Assertions", "org.junit.jupiter.api", "Assertions"),
                                  ("Assertions", "", "Assertions"), ("Math", "", "Math"),
                                  ("SolutionTest", "", "SolutionTest"), ("java.util.Fake", "java.util", "Fake"),
                                  ("proctor.split.ProctorSplit", "proctor.split", "ProctorSplit")]:
            d = json.loads(json.dumps(GOOD))
            d[0].update({"name": name, "package": pkg, "simple": simple})
            err = self.check(classes_answer(d), {72})
            self.assertIn(name, err)

    def test_an_exception_of_no_jdk_class_is_refused(self):
        d = json.loads(json.dumps(GOOD))
        d[0].update({"superKind": "throwable", "super": "org.opentest4j.TestAbortedException"})
        self.check(classes_answer(d), {72})

    def test_messages_outside_the_protocol(self):
        for raw in [b"\xff\xff\xff\xff", frame(b"[1, 2]"), frame(b"{\"re\": 99, \"ok\": []}"),
                    frame(b"\xc3\x28"), frame(b"{\"re\": 1, \"ok\": \"not a list\"}"),
                    frame(b"{\"re\": 1, \"ok\": [1, 2]}"), frame(b"{\"re\": 1, \"ok\": [{\"name\": 5}]}"),
                    frame(b"{\"re\": 1, \"exc\": {\"type\": {\"name\": \"java.lang.Error\"}, \"message\": \"x\"}}"),
                    frame(("[" * 5000 + "]" * 5000).encode())]:
            self.check(lambda req, raw=raw: raw, {70, 73})

    def test_mutated_descriptions_end_cleanly(self):
        rng = random.Random(21)
        keys = ["name", "simple", "package", "kind", "access", "typeParams", "superKind", "super", "interfaces",
                "ctors", "methods", "fields", "constants", "nested", "abstract"]
        junk = [None, 5, "", "x y", [], {}, [[]], "<", "int[", True, "java.lang.Object", ["T extends"]]
        for _ in range(12):
            d = json.loads(json.dumps(GOOD))
            for _ in range(rng.randint(1, 3)):
                target = d[0] if rng.random() < 0.6 else d[0]["methods"][0]
                target[rng.choice(keys)] = rng.choice(junk)
            # The launcher runs when the description still compiles: its
            # call of add() then finds this side gone (70).
            self.check(classes_answer(d), {1, 70, 72, 73})


class HonestRun(unittest.TestCase):
    def test_a_real_program_side_passes(self):
        w = Work(TEST_SOURCE)
        try:
            os.mkdir(os.path.join(w.dir, "classes"))
            src = os.path.join(w.dir, "classes", "Solution.java")
            with open(src, "w") as f:
                f.write("public class Solution { public static int add(int a, int b) { return a + b; } }\n")
            subprocess.run(["javac", "-d", os.path.join(w.dir, "classes"), src], check=True)
            os.unlink(src)
            if os.geteuid() == 0:
                # The harness takes root's and its own files for the tests':
                # the submission's are someone else's.
                for root, _, files in os.walk(os.path.join(w.dir, "classes")):
                    for n in files:
                        os.chown(os.path.join(root, n), 65534, 65534)
            a, b = socket.socketpair()
            p = start(["java", "-cp", RUNTIME + ":classes", "proctor.split.ProctorSplit", "program"], b.fileno(),
                      w.dir)
            h = start(["java", "-XX:TieredStopAtLevel=1", "-cp", RUNTIME + ":" + JAR, "proctor.split.ProctorSplit",
                       "harness", "--class-path", "classes", "--select-class", "SolutionTest", "--disable-banner",
                       "--details=summary", "--disable-ansi-colors"], a.fileno(), w.dir)
            a.close()
            b.close()
            out, err = h.communicate(timeout=120)
            p.communicate(timeout=60)
            self.assertEqual(h.returncode, 0, err.decode(errors="replace")[-2000:])
            self.assertIn(b"1 tests successful", out)
        finally:
            w.close()


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    failed = len(r.failures) + len(r.errors)
    # cmocka's summary lines, which scripts/test.sh counts, then the plain one.
    print("[  PASSED  ] %d test(s)." % (r.testsRun - failed - len(r.skipped)))
    if r.skipped:
        print("[  SKIPPED ] %d test(s)." % len(r.skipped))
    if failed:
        print("[  FAILED  ] %d test(s)." % failed)
    print("%d passed, %d failed" % (r.testsRun - failed - len(r.skipped), failed))
    sys.exit(1 if failed else 0)
