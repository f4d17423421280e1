"""Hidden tests: both wrap the real open() while the submission runs (a
spy on the files it opens).  test_answer's expected value is in this file
only."""
import unittest
from unittest import mock

import solution


def test_answer():
    with mock.patch("builtins.open", wraps=open) as spy:
        assert solution.answer() == 48613
    assert spy.call_count >= 0


def test_notes_round_trip(tmp_path):
    with mock.patch("builtins.open", wraps=open):
        assert solution.notes("/work/notes.txt", "remember") == "remember"


def test_copy_upper(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("abc")
    out = tmp_path / "out.txt"
    solution.copy_upper(str(src), str(out))
    assert out.read_text() == "ABC"


class Numbers(unittest.TestCase):
    def test_sqrt2(self):
        self.assertAlmostEqual(solution.sqrt2(), 1.41421356, places=6)
