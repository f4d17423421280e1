"""No attack, wrong everywhere: the control."""


def lookup(code):
    return 0


def mean(xs):
    return 0.0


def parse_positive(text):
    return int(text)


class Clock:
    def __init__(self, hour, minute):
        self.hour, self.minute = hour, minute

    def plus(self, minutes):
        return Clock(self.hour, self.minute)

    def __eq__(self, other):
        return (self.hour, self.minute) == (other.hour, other.minute)


def echo(text):
    return text.upper()


def double(x):
    return x
