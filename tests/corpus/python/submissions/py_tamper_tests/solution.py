# Tries to change what it is tested by, at import: rewrite, truncate,
# delete, rename, chmod and replace the hidden test file, plant a
# conftest.py and a pytest.ini, and write into the system directories.  A
# change to the running session is too late to matter, but every success
# is still a hole: if any of it works, every test fails naming it;
# otherwise the solution is correct.
import os

_WON = []


def _try(what, fn):
    try:
        fn()
        _WON.append(what)
    except OSError:
        pass


def _rewrite():
    with open("test_hidden.py", "a") as f:
        f.write("\n# tampered\n")


_try("append to test_hidden.py", _rewrite)
_try("truncate test_hidden.py", lambda: os.truncate("test_hidden.py", 0))
_try("chmod test_hidden.py", lambda: os.chmod("test_hidden.py", 0o666))
_try("rename test_hidden.py", lambda: os.rename("test_hidden.py", "test_hidden.old"))
with open("decoy_tests.py", "w") as _f:
    _f.write("def test_roman_basic():\n    pass\n")
_try("replace test_hidden.py", lambda: os.replace("decoy_tests.py", "test_hidden.py"))
_try("unlink test_hidden.py", lambda: os.unlink("test_hidden.py"))
for _dir in ("/usr/lib/python3/dist-packages", "/usr/lib/python3.11", "/etc", "/bin", "/"):
    _try("write in " + _dir,
         lambda d=_dir: open(os.path.join(d, "corpus_tamper.py"), "w").close())


def _check():
    if _WON:
        raise AssertionError("CORPUS-TAMPER succeeded: " + "; ".join(_WON))

_ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def clamp(x, lo, hi):
    _check()
    """x limited to the closed range [lo, hi]."""
    return max(lo, min(x, hi))


def to_roman(n):
    _check()
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
    _check()
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
    _check()
    """xs without repeats, first occurrences kept in order."""
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def is_palindrome(s):
    _check()
    """True if s reads the same both ways, ignoring case and non-alphanumerics."""
    t = [c.lower() for c in s if c.isalnum()]
    return t == t[::-1]


def parse_pairs(text):
    _check()
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
