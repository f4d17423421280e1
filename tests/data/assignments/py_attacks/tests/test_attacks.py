"""Hidden tests that the submissions under py_attacks/submissions attack.

test_greet is visible: its failure message is kept in the student view.
test_secret_code is hidden: its expected value must never reach a student.
"""
import solution


def test_add():
    assert solution.add(2, 3) == 5


def test_reverse_words():
    assert solution.reverse_words("a b c") == "c b a"


def test_evens():
    assert solution.evens([1, 2, 3, 4]) == [2, 4]


def test_greet():
    assert solution.greet("Ann") == "Hello, Ann!"


def test_secret_code():
    assert solution.secret_code() == "AARDVARK-7c1f-93"
