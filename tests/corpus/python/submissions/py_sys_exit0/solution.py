# sys.exit(0) at import: pytest turns the SystemExit into a collection
# error (exit 2).  Nothing ran, nothing passed.
import sys

sys.exit(0)

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
