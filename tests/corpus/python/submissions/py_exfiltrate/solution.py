# Network probe.  At import it tries TCP to loopback services and to two
# documentation-only addresses (TEST-NET-2 and -3, owned by nobody), a UDP
# send, a DNS lookup, an abstract unix socket of the host and lists the
# network interfaces.  If anything gets through, every test fails naming
# it; with no network at all the solution is correct.  Each probe gives up
# after a second.  NEVER run outside a network namespace with no route out.
import os
import socket
import threading

_LEAKS = []


def _tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect((host, port))
        _LEAKS.append("tcp %s:%d" % (host, port))
    except OSError:
        pass
    finally:
        s.close()


for _host, _port in [("127.0.0.1", 22), ("127.0.0.1", 53), ("127.0.0.1", 5432),
                     ("127.0.0.1", 8080), ("198.51.100.23", 80), ("203.0.113.23", 443)]:
    _tcp(_host, _port)

try:
    _u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _u.sendto(b"corpus", ("198.51.100.23", 53))
    _LEAKS.append("udp to 198.51.100.23:53 accepted")
except OSError:
    pass

# The host's abstract unix sockets (systemd, dbus, X11) live in the network
# namespace: reaching one means the sandbox shares the host's.
try:
    with open("/proc/net/unix") as _f:
        _abstract = [l.split()[-1] for l in _f if l.split()[-1].startswith("@")]
    for _name in _abstract[:20]:
        _s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _s.settimeout(1.0)
        try:
            _s.connect("\0" + _name[1:])
            _LEAKS.append("unix " + _name)
        except OSError:
            pass
        finally:
            _s.close()
except OSError:
    pass

_answer = []
_t = threading.Thread(target=lambda: _answer.append(socket.getaddrinfo("example.org", 443)),
                      daemon=True)
_t.start()
_t.join(2.0)
if _answer:
    _LEAKS.append("dns example.org resolved")

try:
    _ifaces = [i for i in os.listdir("/sys/class/net") if i != "lo"]
    if _ifaces:
        _LEAKS.append("interfaces " + ",".join(_ifaces))
except OSError:
    pass


def _check():
    if _LEAKS:
        raise AssertionError("CORPUS-NET-LEAK " + "; ".join(_LEAKS))

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
