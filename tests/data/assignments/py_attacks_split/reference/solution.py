"""Reference solution of py_attacks_split: full marks, no tricks, no
__all__ (a star import binds its public names)."""


def lookup(code):
    return len(code)


def mean(xs):
    return sum(xs) / len(xs)


def parse_positive(text):
    n = int(text)
    if n < 0:
        raise ValueError("negative: %d" % n)
    return n


class Clock:
    def __init__(self, hour, minute):
        self.hour, self.minute = divmod((hour * 60 + minute) % 1440, 60)

    def plus(self, minutes):
        return Clock(self.hour, self.minute + minutes)

    def __eq__(self, other):
        return (self.hour, self.minute) == (other.hour, other.minute)

    def __repr__(self):
        return "Clock(%d, %d)" % (self.hour, self.minute)


def echo(text):
    return text


def double(x):
    return 2 * x
