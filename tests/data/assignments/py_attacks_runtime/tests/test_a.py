"""The first test file: importing the submission here is what lets a
submission plant a module before test_b.py is collected."""
from solution import double


def test_double():
    assert double(21) == 42
