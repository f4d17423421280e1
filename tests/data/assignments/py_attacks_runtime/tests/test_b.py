"""The second test file imports a stdlib module the harness has not
loaded yet: it must be Python's own, whatever the submission did."""
import statistics

from solution import mean, triple


def test_triple():
    assert triple(5) == 15


def test_mean():
    assert mean([1, 2, 6]) == statistics.mean([1, 2, 6])
