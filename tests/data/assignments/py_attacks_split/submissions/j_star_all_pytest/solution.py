"""Attack (j): __all__ names `pytest`, so `from solution import *` in the
tests would replace their pytest with this module's: approx() returns an
object equal to anything and raises() a context manager that asks nothing.
The code itself is wrong."""
import types

__all__ = ["pytest", "lookup", "mean", "parse_positive", "Clock", "echo", "double"]


class _Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


class _Quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


pytest = types.ModuleType("pytest")
pytest.approx = lambda expected, *args, **kwargs: _Anything()
pytest.raises = lambda *args, **kwargs: _Quiet()


def lookup(code):
    return 0


def mean(xs):
    return _Anything()


def parse_positive(text):
    return 12


class Clock:
    def __init__(self, hour, minute):
        self.hour, self.minute = hour, minute

    def plus(self, minutes):
        return self

    def __eq__(self, other):
        return (self.hour, self.minute) == (other.hour, other.minute)


def echo(text):
    return ""


def double(x):
    return x
