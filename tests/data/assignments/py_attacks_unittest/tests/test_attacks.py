"""Hidden unittest tests that the submissions under py_attacks_unittest
attack.  test_greet is visible (its failure message is kept in the student
view); test_secret_code is hidden and its expected value must never reach a
student."""
import unittest

import solution


class AttackedTest(unittest.TestCase):
    def test_add(self):
        import expected  # hidden, imported after the submission

        self.assertEqual(solution.add(2, 3), expected.SUM)

    def test_reverse_words(self):
        self.assertEqual(solution.reverse_words("a b c"), "c b a")

    def test_evens(self):
        self.assertEqual(solution.evens([1, 2, 3, 4]), [2, 4])

    def test_greet(self):
        self.assertEqual(solution.greet("Ann"), "Hello, Ann!")

    def test_secret_code(self):
        self.assertEqual(solution.secret_code(), "AARDVARK-7c1f-93")
