# Loads and runs, but every answer is wrong: 0/8.

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
