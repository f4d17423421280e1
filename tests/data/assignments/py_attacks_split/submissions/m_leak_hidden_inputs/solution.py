"""Attack (m): the submission's process lives for the whole run, so it
records every input the tests pass it (and in a file, in case the process
is replaced), and a visible test's failure message -- which the student
view keeps -- shows what the hidden test passed.  Wrong everywhere."""
import os

_SEEN = []
_FILE = ".seen-inputs"  # the working directory, /work


def _note(x):
    _SEEN.append(repr(x))
    try:
        with open(_FILE, "a") as f:
            f.write(repr(x) + "\n")
    except OSError:
        pass


def _recorded():
    text = " ".join(_SEEN)
    try:
        with open(_FILE) as f:
            text += " " + f.read().replace("\n", " ")
    except OSError:
        pass
    return text


def lookup(code):
    _note(code)
    return 0


def mean(xs):
    _note(xs)
    return 0.0


def parse_positive(text):
    _note(text)
    return 0


class Clock:
    def __init__(self, hour, minute):
        self.hour, self.minute = hour, minute

    def plus(self, minutes):
        return self

    def __eq__(self, other):
        return (self.hour, self.minute) == (other.hour, other.minute)


def echo(text):
    return "seen: " + _recorded()


def double(x):
    raise ValueError("seen: " + _recorded())
