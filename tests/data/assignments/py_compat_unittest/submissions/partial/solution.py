"""A partial solution of py_compat_unittest: four tests fail (EXPECTED.tsv)."""
from dataclasses import dataclass


class OutOfStock(LookupError):
    pass


class Inventory:
    def __init__(self):
        self._stock = {}

    def add(self, name, qty):
        if qty <= 0:
            raise ValueError("quantity must be positive, got %d" % qty)
        self._stock[name] = self._stock.get(name, 0) + qty

    def remove(self, name, qty):
        have = self._stock.get(name, 0)
        if have < qty:
            raise OutOfStock("only %d %s" % (have, name))
        self._stock[name] = have - qty

    def count(self, name):
        return self._stock.get(name, 0)

    def names(self):
        return sorted(self._stock)

    def __len__(self):
        return len(self._stock)

    def __iter__(self):
        return iter(self.names())

    def __repr__(self):
        return "Inventory[%s]" % ", ".join("%s=%d" % (n, self._stock[n]) for n in self.names())


@dataclass
class Item:
    name: str
    price: float


def total_price(items, tax=0.0):
    return sum(i.price for i in items) * (1 + tax)


def cheapest(items, n):
    return sorted(items, key=lambda i: i.price)[:n]


def pick(items, key):
    return min(items, key=key)


def is_prime(n):
    return n >= 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def primes():
    n = 2
    while True:
        if is_prime(n):
            yield n
        n += 1


def report(counts):
    for k in counts:  # not sorted
        print("%s: %d" % (k, counts[k]))


def by_initial(words):
    out = {}
    for w in words:
        out.setdefault(w[0], []).append((w, len(w)))
    return out


def initials(words):
    return {w[0] for w in words}


def first_even(xs):
    return next((x for x in xs if x % 2 == 0), None)


def xor_bytes(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def square(n):
    return n * n


def word_count(text):
    out = {}
    for w in text.split(" "):
        out[w] = out.get(w, 0) + 1
    return out


def ask_product():
    return int(input("x? ")) * int(input("y? "))


def today():
    import datetime
    return datetime.date.today().isoformat()


def is_leap_day():
    return today().endswith("-02-29")
