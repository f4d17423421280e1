# Looks for the grader's secrets from inside the sandbox: its own
# environment, every readable /proc/*/environ and cmdline, password hashes,
# ssh keys, cloud credentials, the docker socket, the host's shell history.
# Run the grader with canaries in its environment (DATABASE_URL,
# ADV_CANARY_SECRET, GITHUB_TOKEN holding "ADV-CANARY"): if any canary or
# secret is visible, every test fails naming what was found (names only,
# never values); otherwise the solution is correct.
import glob
import os

_HITS = []
_SECRET_NAMES = ("DATABASE_URL", "ADV_CANARY_SECRET", "AWS_SECRET_ACCESS_KEY")


def _env_hits(where, pairs):
    for key, value in pairs:
        if key in _SECRET_NAMES or key.endswith("_TOKEN") or "ADV-CANARY" in value:
            _HITS.append("%s:%s" % (where, key))


_env_hits("env", os.environ.items())
for _path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    if _path.split("/")[2] == str(os.getpid()):
        continue
    try:
        with open(_path, "rb") as _f:
            _raw = _f.read(1 << 20).decode(errors="replace")
    except OSError:
        continue
    if "ADV-CANARY" in _raw:
        _HITS.append(_path + " holds a canary")
    _env_hits(_path, [kv.split("=", 1) for kv in _raw.split("\0") if "=" in kv])
try:
    with open("/etc/shadow") as _f:
        _HITS += ["/etc/shadow hash of " + l.split(":")[0] for l in _f
                  if len(l.split(":")) > 1 and l.split(":")[1][:1] == "$"]
except OSError:
    pass
for _pattern in ("/root/.ssh/id_*", "/home/*/.ssh/id_*", "/etc/ssh/ssh_host_*_key",
                 "/root/.aws/credentials", "/root/.netrc", "/root/.bash_history",
                 "/run/secrets/*", "/var/run/docker.sock", "/run/docker.sock",
                 "/var/lib/proctor/*"):
    for _path in glob.glob(_pattern):
        if os.path.exists(_path) and not _path.endswith(".pub"):
            _HITS.append("sees " + _path)


def _check():
    if _HITS:
        raise AssertionError("CORPUS-SECRET-LEAK " + "; ".join(_HITS[:20]))

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
