# Every function raises: the tests run and fail one by one (this is not a
# collection error).  to_roman raises TypeError, not ValueError, so even the
# test that expects an exception fails.


def clamp(x, lo, hi):
    raise RuntimeError("clamp: not implemented")


def to_roman(n):
    raise TypeError("to_roman: not implemented")


def rle(s):
    return s[len(s) + 1]


def dedupe(xs):
    return xs.no_such_method()


def is_palindrome(s):
    return 1 // 0


def parse_pairs(text):
    raise KeyError(text)
