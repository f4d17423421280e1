"""Hidden tests that the submissions under py_attacks_split/submissions
attack.  test_lookup_secret is hidden and comes first in the file: it
passes the submission an input no student may see (ZEBRA-5d2e-71); the
other tests are visible, and their failure messages are kept in the
student view."""
import pytest

from solution import *  # noqa: F401,F403 -- never the tests' pytest


def test_lookup_secret():
    assert lookup("ZEBRA-5d2e-71") == 13


def test_mean():
    assert mean([1, 2, 4]) == pytest.approx(7 / 3)


def test_parse_rejects_negative():
    with pytest.raises(ValueError):
        parse_positive("-3")
    assert parse_positive("12") == 12


def test_clock_plus():
    assert Clock(10, 0).plus(3) == Clock(10, 3)
    assert Clock(23, 59).plus(2) == Clock(0, 1)


def test_echo():
    assert echo("ping") == "ping"


def test_double():
    assert double(21) == 42
