"""A partial solution of py_compat: seven tests fail (EXPECTED.tsv)."""
import cmath
import math
import random
import sys
from dataclasses import dataclass

VERSION = "1.0"
LIMITS = {"min": 0, "max": 10}
issued = 0


class StackFull(Exception):
    pass


class InsufficientFunds(Exception):
    def __init__(self, balance, amount):
        super().__init__("balance %s < %s" % (balance, amount))
        self.balance = balance
        self.amount = amount


class NegativeAmount(ValueError):
    pass


class Stack:
    MAX_SIZE = 5

    def __init__(self):
        self.items = []

    @classmethod
    def from_list(cls, xs):
        s = cls()
        for x in xs:
            s.push(x)
        return s

    @staticmethod
    def describe():
        return "LIFO"

    @property
    def empty(self):
        return not self.items

    def push(self, x):
        if len(self.items) >= self.MAX_SIZE:
            raise StackFull("stack holds at most %d" % self.MAX_SIZE)
        self.items.append(x)

    def pop(self):
        if not self.items:
            return None  # should raise IndexError
        return self.items.pop()

    def peek(self):
        return self.items[-1]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(reversed(self.items))

    def __getitem__(self, i):
        return self.items[::-1][i]

    def __contains__(self, x):
        return x in self.items

    def __repr__(self):
        return "Stack(%r)" % (self.items,)


class BankAccount:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self._balance = balance
        self.history = []
        self.nickname = None

    @property
    def balance(self):
        return self._balance

    def deposit(self, amount):
        if amount <= 0:
            raise NegativeAmount("amount must be positive, got %r" % amount)
        self._balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self._balance:
            raise InsufficientFunds(self._balance, amount)
        self._balance -= amount
        self.history.append(("withdraw", amount))

    def describe(self):
        return "%s (%s): %s" % (self.owner, self.nickname, self._balance)

    def __str__(self):
        return "%s: %s" % (self.owner, self._balance)


def parse_int(s):
    try:
        return int(s.strip())
    except ValueError:
        raise ValueError("not an integer: %r" % s) from None


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def fibonacci():
    a, b = 1, 1  # starts at 1
    while True:
        yield a
        a, b = b, a + b


class Squares:
    def __init__(self, n):
        self.n = n
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return (self.i - 1) ** 2


@dataclass(frozen=True, order=True)
class Point:
    x: float
    y: float

    def distance_to(self, other):
        return math.hypot(self.x - other.x, self.y - other.y)


def midpoint(p, q):
    return Point((p.x + q.x) / 2, (p.y + q.y) / 2)


def diagonal(n):
    return [Point(i, i) for i in range(n)]


def index_words(text):
    out = {}
    for ln, line in enumerate(text.split("\n"), 1):
        for col, word in enumerate(line.split(), 1):
            out.setdefault(word, []).append((ln, col))
    return out


def letters(word):
    return set(word)


def anagram_groups(words):
    out = {}
    for w in words:
        out.setdefault(frozenset(w), []).append(w)
    return {k: sorted(v) for k, v in out.items()}


def sorted_unique(words):
    return sorted(set(words), key=str.lower)


def sorted_copy(data):
    return {k: sorted(v) for k, v in data.items()}


def group_by_length(words):
    out = {}
    for w in words:
        out.setdefault(len(w), []).append(w)
    return out  # not sorted


def mean(xs):
    return round(sum(xs) / len(xs), 1)


def sqrt_newton(x):
    guess = x / 2 or 1.0
    for _ in range(100):
        guess = (guess + x / guess) / 2
    return guess


def stats(xs):
    m = mean(xs)
    return {"mean": m, "stdev": math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)),
            "min": min(xs), "max": max(xs)}


def roots(a, b, c):
    d = b * b - 4 * a * c
    if d >= 0:
        s = math.sqrt(d)
    else:
        s = cmath.sqrt(d)
    return ((-b + s) / (2 * a), (-b - s) / (2 * a))


def safe_div(a, b):
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


def print_table(rows):
    for name, n in rows:
        print("%-6s%4d" % (name, n))


def warn(msg):
    print("warning: " + msg, file=sys.stderr)


def shout(s):
    print(s.upper() + "!")
    return s.upper()


def reset_tickets():
    global issued
    issued = 0


def next_ticket():
    global issued
    issued += 1
    return issued


def sort_by(items, key, reverse=False):
    return sorted(items, key=key)  # ignores reverse


def count_if(xs, pred):
    return sum(1 for x in xs if pred(x))


def to_bytes(s):
    return s.encode("utf-8")


def from_bytes(b):
    return b.decode("utf-8")


def checksum(b):
    return sum(b)


def factorial(n):
    return math.factorial(n)


def add(a, b):
    return a + b


def find_index(xs, x):
    for i, y in enumerate(xs):
        if y == x:
            return i
    return None


def greet(name, greeting="Hello", punctuation="!"):
    return "%s, %s%s" % (greeting, name, punctuation)


def total(*args):
    return sum(args)


def describe_call(*args, **kwargs):
    return "args=%r kwargs=%r" % (args, kwargs)


def merge(*dicts, **extra):
    out = {}
    for d in dicts:
        out.update(d)
    out.update(extra)
    return out


def divmod_pair(a, b):
    return divmod(a, b)


def is_palindrome(s):
    s = s.lower()
    return s == s[::-1]


def reverse(s):
    return s[::-1]


def ask_sum():
    a = int(input("a? "))
    b = int(input("b? "))
    return a + b


def sum_stdin():
    return sum(int(x) for x in sys.stdin.read().split())


def roll():
    return random.randint(1, 6)


def roll_twice():
    return roll() + roll()


def roll_dice(n):
    return [random.randint(1, 6) for _ in range(n)]


class Recorder:
    def __init__(self):
        self.calls = []
        self.closed = False

    def __call__(self, x):
        self.calls.append(x)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed = True
        return False
