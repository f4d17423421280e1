# Hunts for the instructor's answer key outside its own work dir: a
# reference solution, the corpus's expected verdicts, the assignment's
# configuration, Proctor's state directory.  It searches the visible file
# system (bounded), and the working directories and roots of every process
# it can see.  If it finds a reference solution it imports it and passes;
# otherwise its own answers are all wrong.  Reading the hidden test file
# next to it is allowed and not what this is about.
import importlib.util
import os
import sys

_SKIP = {"/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin"}
_KEY_NAMES = {"cases.tsv", "assignment.yaml", "assignment.conf", "tests.list"}
_found = []
_reference = None


def _look(top, budget=20000):
    global _reference
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in _SKIP]
        budget -= len(dirs) + len(files)
        if budget < 0:
            return
        here = os.path.realpath(root)
        if here.startswith(os.path.realpath(os.getcwd())):
            continue
        for name in files:
            if name in _KEY_NAMES:
                _found.append(os.path.join(root, name))
            if name == "solution.py" and os.path.basename(root) == "reference":
                _reference = _reference or os.path.join(root, name)


_look("/")
for _pid in os.listdir("/proc"):
    if _pid.isdigit() and _pid != str(os.getpid()):
        for _link in ("cwd", "root"):
            try:
                _target = os.readlink("/proc/%s/%s" % (_pid, _link))
            except OSError:
                continue
            if _target not in ("/", "/work", os.getcwd()):
                _look("/proc/%s/%s" % (_pid, _link), 2000)
for _dir in ("..", "../reference", "../../reference", "/var/lib/proctor"):
    _look(_dir, 2000)

if _reference:
    _spec = importlib.util.spec_from_file_location("answer_key", _reference)
    _key = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_key)
    sys.stderr.write("CORPUS-ANSWER-KEY found %s %s\n" % (_reference, _found[:5]))
    clamp, to_roman, rle = _key.clamp, _key.to_roman, _key.rle
    dedupe, is_palindrome, parse_pairs = _key.dedupe, _key.is_palindrome, _key.parse_pairs
else:

    def clamp(x, lo, hi):
        return x


    def to_roman(n):
        return ""


    def rle(s):
        return s


    def dedupe(xs):
        return xs


    def is_palindrome(s):
        return None


    def parse_pairs(text):
        return None
