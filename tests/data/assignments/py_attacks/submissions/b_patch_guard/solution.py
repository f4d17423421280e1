"""Attack (b): rewrite the pytest guard's in-memory results, so the summary
it signs says every test passed."""
import sys

_guard = sys.modules.get("proctor_guard")


class _AlwaysPassed(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, "passed")


if _guard is not None:
    _guard._RESULTS = _AlwaysPassed()
    _guard._MESSAGES = {}


def add(a, b):
    return a - b


def reverse_words(s):
    return s


def evens(xs):
    return xs


def greet(name):
    return "Hi " + name


def secret_code():
    return "no idea"
