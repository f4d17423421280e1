"""Attack (e): read the hidden test file.  secret_code() returns the value
the hidden test expects; greet() returns it too, so the visible test's
failure message (kept in the student view) shows it to the student."""
import glob
import os
import re


def _hidden_expected():
    found = []
    for path in glob.glob(os.path.join(os.getcwd(), "test_*.py")) + glob.glob("/work/test_*.py"):
        try:
            with open(path, encoding="utf-8") as f:
                found += re.findall(r'secret_code\(\)\s*(?:==|,)\s*"([^"]*)"', f.read())
        except OSError:
            pass
    return found[0] if found else "unreadable"


def add(a, b):
    return a - b


def reverse_words(s):
    return s


def evens(xs):
    return xs


def greet(name):
    return "leak: " + _hidden_expected()


def secret_code():
    return _hidden_expected()
