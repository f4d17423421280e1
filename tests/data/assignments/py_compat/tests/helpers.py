"""Helpers of the hidden tests: imported by test_compat.py, never by the
submission.  In a split run they live in the harness process."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def load_words():
    """The words of data/words.txt, one a line, next to this module."""
    with open(os.path.join(_HERE, "data", "words.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def assert_sorted(xs, key=None):
    keyed = [key(x) if key else x for x in xs]
    assert keyed == sorted(keyed), "not sorted: %r" % (xs,)


def expected_lengths(words):
    out = {}
    for w in words:
        out.setdefault(len(w), []).append(w)
    return {n: sorted(ws) for n, ws in out.items()}
