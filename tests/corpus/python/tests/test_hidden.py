# The instructor's hidden tests for the corpus's Python assignment.
# Eight declared tests (tests.list) in two styles: three unittest methods
# and five plain pytest functions.  test_not_in_manifest is deliberately not
# declared: a grader must ignore it, whatever its outcome.
# Expected values are computed here where that is cheap, so the answers are
# not all literals a submission could lift from this file.
import unittest

import pytest

from solution import clamp, dedupe, is_palindrome, parse_pairs, rle, to_roman


class TestRoman(unittest.TestCase):
    def test_roman_basic(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(8), "VIII")
        self.assertEqual(to_roman(2023), "MMXXIII")

    def test_roman_subtractive(self):
        self.assertEqual(to_roman(4), "IV")
        self.assertEqual(to_roman(94), "XCIV")
        self.assertEqual(to_roman(1999), "MCMXCIX")

    def test_roman_rejects_zero(self):
        with self.assertRaises(ValueError):
            to_roman(0)
        with self.assertRaises(ValueError):
            to_roman(4000)


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-3, 0, 10) == 0
    assert clamp(12, 0, 10) == 10
    assert clamp(2.5, 1.0, 2.0) == 2.0


def test_rle():
    assert rle("") == ""
    assert rle("aaabcc") == "3a1b2c"
    assert rle("x" * 12) == "12x"


def test_dedupe():
    data = [3, 1, 3, 2, 1, 3]
    r = dedupe(data)
    assert r == [3, 1, 2]
    assert data == [3, 1, 3, 2, 1, 3], "dedupe must not change its argument"


def test_palindrome():
    assert is_palindrome("A man, a plan, a canal: Panama")
    assert is_palindrome("")
    assert not is_palindrome("corpus")


def test_parse_pairs():
    assert parse_pairs("a=1, b=22,c=-3") == {"a": 1, "b": 22, "c": -3}
    assert parse_pairs("") == {}
    with pytest.raises(ValueError):
        parse_pairs("a=1, oops")


def test_not_in_manifest():
    assert True
