# os._exit(0) at import: the runner vanishes with status 0 and no report.
# Exit status 0 without a report is never a pass.
import os

os._exit(0)

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
