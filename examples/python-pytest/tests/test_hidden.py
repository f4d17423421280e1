# Hidden tests for the text statistics assignment (6 tests).
# A word is a run of letters; words are compared without regard to case.
import pytest

from solution import average_word_length, most_common_word, word_count, word_frequencies


def test_word_count_simple():
    assert word_count("the quick brown fox") == 4
    assert word_count("") == 0


def test_word_count_punctuation():
    assert word_count("red,green;blue -- yellow!") == 4


def test_word_frequencies_ignore_case():
    assert word_frequencies("The cat and the hat") == {"the": 2, "cat": 1, "and": 1, "hat": 1}


def test_most_common_word():
    assert most_common_word("one fish two fish red fish blue fish") == "fish"
    assert most_common_word("...") is None


def test_most_common_word_tie():
    # Ties go to the word that comes first in alphabetical order.
    assert most_common_word("pear apple pear apple") == "apple"


def test_average_word_length():
    assert average_word_length("I am here") == pytest.approx(7 / 3)
    with pytest.raises(ValueError):
        average_word_length("  ")
