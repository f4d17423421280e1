"""Reference solution of py_compat_realworld: classes of the kinds that
real-world exercise suites test (clocks, complex and rational numbers,
metered sockets, reactive cells, custom containers, file readers)."""
import math
import time

__all__ = ["Clock", "ComplexNumber", "Rational", "MeteredSocket", "Reactor", "Bag",
           "Interval", "LinkedList", "CustomSet", "count_lines", "read_lines", "first_line",
           "say", "stamp", "roll", "add_gigasecond",
           "total_area", "widest", "Account", "double_later",
           "Dice", "play_twice", "InsufficientFunds", "withdraw",
           "greet_from_env", "checked_divide",
           "count_lines_in", "write_upper"]


class Clock:
    def __init__(self, hour, minute):
        total = (hour * 60 + minute) % (24 * 60)
        self.hour, self.minute = divmod(total, 60)

    def __repr__(self):
        return "Clock(%d, %d)" % (self.hour, self.minute)

    def __str__(self):
        return "%02d:%02d" % (self.hour, self.minute)

    def __format__(self, spec):
        return format(str(self), spec)

    def __eq__(self, other):
        return isinstance(other, Clock) and (self.hour, self.minute) == (other.hour, other.minute)

    def __hash__(self):
        return hash((self.hour, self.minute))

    def __add__(self, minutes):
        return Clock(self.hour, self.minute + minutes)

    def __sub__(self, minutes):
        return Clock(self.hour, self.minute - minutes)


class ComplexNumber:
    def __init__(self, real, imaginary=0):
        self.real, self.imaginary = real, imaginary

    def __eq__(self, other):
        other = _complex(other)
        return self.real == other.real and self.imaginary == other.imaginary

    def __hash__(self):
        return hash((self.real, self.imaginary))

    def __repr__(self):
        return "ComplexNumber(%r, %r)" % (self.real, self.imaginary)

    def __add__(self, other):
        other = _complex(other)
        return ComplexNumber(self.real + other.real, self.imaginary + other.imaginary)

    __radd__ = __add__

    def __sub__(self, other):
        other = _complex(other)
        return ComplexNumber(self.real - other.real, self.imaginary - other.imaginary)

    def __rsub__(self, other):
        return _complex(other) - self

    def __mul__(self, other):
        other = _complex(other)
        return ComplexNumber(self.real * other.real - self.imaginary * other.imaginary,
                             self.real * other.imaginary + self.imaginary * other.real)

    __rmul__ = __mul__

    def __truediv__(self, other):
        other = _complex(other)
        d = other.real ** 2 + other.imaginary ** 2
        return ComplexNumber((self.real * other.real + self.imaginary * other.imaginary) / d,
                             (self.imaginary * other.real - self.real * other.imaginary) / d)

    def __rtruediv__(self, other):
        return _complex(other) / self

    def __abs__(self):
        return math.hypot(self.real, self.imaginary)

    def conjugate(self):
        return ComplexNumber(self.real, -self.imaginary)


def _complex(x):
    return x if isinstance(x, ComplexNumber) else ComplexNumber(x, 0)


class Rational:
    def __init__(self, numer, denom):
        g = math.gcd(numer, denom) or 1
        if denom < 0:
            g = -g
        self.numer, self.denom = numer // g, denom // g

    def __eq__(self, other):
        return self.numer == other.numer and self.denom == other.denom

    def __repr__(self):
        return "%d/%d" % (self.numer, self.denom)

    def __add__(self, other):
        return Rational(self.numer * other.denom + other.numer * self.denom,
                        self.denom * other.denom)

    def __mul__(self, other):
        return Rational(self.numer * other.numer, self.denom * other.denom)

    def __neg__(self):
        return Rational(-self.numer, self.denom)

    def __abs__(self):
        return Rational(abs(self.numer), self.denom)

    def __pow__(self, power):
        if isinstance(power, int):
            if power < 0:
                return Rational(self.denom ** -power, self.numer ** -power)
            return Rational(self.numer ** power, self.denom ** power)
        return (self.numer / self.denom) ** power

    def __rpow__(self, base):
        return base ** (self.numer / self.denom)


class MeteredSocket:
    """Counts what goes through a socket it wraps; a context manager that
    hands the socket's own __exit__ what it got."""

    def __init__(self, socket):
        self._socket = socket
        self.recv_ops = self.recv_bytes = self.send_ops = self.send_bytes = 0

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return self._socket.__exit__(exc_type, exc_val, exc_tb)

    def recv(self, bufsize, flags=0):
        data = self._socket.recv(bufsize, flags)
        self.recv_ops += 1
        self.recv_bytes += len(data)
        return data

    def send(self, data, flags=0):
        n = self._socket.send(data, flags)
        self.send_ops += 1
        self.send_bytes += n
        return n


class Reactor:
    """Callbacks registered, fired, and removed by identity."""

    def __init__(self):
        self.callbacks = []

    def add_callback(self, cb):
        self.callbacks.append(cb)

    def remove_callback(self, cb):
        if cb in self.callbacks:
            self.callbacks.remove(cb)

    def has_callback(self, cb):
        return any(c is cb for c in self.callbacks)

    def fire(self, value):
        for cb in self.callbacks:
            cb(value)


class Bag:
    """Membership without iteration."""

    def __init__(self, *items):
        self._items = list(items)

    def __contains__(self, x):
        return x in self._items

    def __len__(self):
        return len(self._items)


class Interval:
    def __init__(self, low, high):
        self.low, self.high = low, high

    def __contains__(self, x):
        return self.low <= x <= self.high


class _Node:
    def __init__(self, value, next_=None):
        self.value, self.next = value, next_


class LinkedList:
    def __init__(self, values=()):
        self.head = None
        self._size = 0
        for v in reversed(list(values)):
            self.push(v)

    def push(self, value):
        self.head = _Node(value, self.head)
        self._size += 1

    def __len__(self):
        return self._size

    def __iter__(self):
        node = self.head
        while node:
            yield node.value
            node = node.next

    def __reversed__(self):
        return iter(list(self)[::-1])


class CustomSet:
    def __init__(self, elements=()):
        self.elements = sorted(set(elements))

    def __contains__(self, x):
        return x in self.elements

    def __iter__(self):
        return iter(self.elements)

    def __len__(self):
        return len(self.elements)

    def __eq__(self, other):
        return self.elements == other.elements

    def add(self, x):
        if x not in self.elements:
            self.elements = sorted(self.elements + [x])

    def __sub__(self, other):
        return CustomSet(x for x in self if x not in other)

    def __or__(self, other):
        return CustomSet(list(self) + list(other))


def count_lines(f):
    """Lines of a file the caller gives; closes it."""
    with f:
        return len(f.readlines())


def read_lines(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f.readlines()]


def first_line(path):
    with open(path) as f:
        for line in f:
            return line.rstrip("\n")
    return None


def say(text):
    print(text.upper())


def stamp():
    return time.time()


def roll():
    import random
    return random.randint(1, 6)


def add_gigasecond(moment):
    import datetime
    return moment + datetime.timedelta(seconds=10**9)


def total_area(shapes):
    return sum(s.area() for s in shapes)


def widest(shapes):
    return max(s.w for s in shapes)


class Account:
    def __init__(self):
        import threading
        self._lock = threading.Lock()
        self.balance = 0

    def deposit(self, amount):
        with self._lock:
            self.balance += amount


async def double_later(x):
    import asyncio
    await asyncio.sleep(0)
    return 2 * x


class Dice:
    def roll(self):
        import random
        return random.randint(1, 6)


def play_twice(dice):
    return dice.roll() + dice.roll()


class InsufficientFunds(Exception):
    def __init__(self, needed, currency):
        super().__init__(needed, currency)
        self.needed = needed

    def __str__(self):
        return "need %d %s more" % self.args


def withdraw(balance, amount):
    if amount < 0:
        raise ValueError("negative amount: %d" % amount)
    if amount > balance:
        raise InsufficientFunds(amount - balance, "EUR")
    return balance - amount


def greet_from_env():
    import os
    return "Hello, %s!" % os.environ.get("GREETING_NAME", "stranger")


def checked_divide(a, b):
    import logging
    log = logging.getLogger("solution.math")
    log.debug("dividing %s by %s", a, b)
    if b == 0:
        log.warning("division by zero: %s / %s", a, b)
        return None
    return a / b


def count_lines_in(path):
    with open(path) as f:
        return sum(1 for _ in f)


def write_upper(src, dst):
    with open(src) as f, open(dst, "w") as g:
        g.write(f.read().upper())
