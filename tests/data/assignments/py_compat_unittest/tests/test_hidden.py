"""Hidden unittest tests of the shapes real suites have (issue 12): each must
pass against the reference solution whether the submission runs in the
tests' process (test.in_process: true) or in a process of its own."""
import contextlib
import io
import itertools
import math
import unittest
from unittest import mock

import solution
from solution import Inventory, Item, OutOfStock


class InventoryTest(unittest.TestCase):
    def setUp(self):
        self.inv = Inventory()
        self.inv.add("apple", 3)
        self.inv.add("pear", 1)

    def test_add_and_count(self):
        self.assertEqual(self.inv.count("apple"), 3)
        self.assertEqual(self.inv.count("kiwi"), 0)
        self.assertEqual(len(self.inv), 2)

    def test_remove_raises_custom_exception(self):
        with self.assertRaises(solution.OutOfStock):
            self.inv.remove("pear", 2)
        with self.assertRaisesRegex(OutOfStock, "only 1 pear"):
            self.inv.remove("pear", 5)
        self.assertEqual(self.inv.count("pear"), 1)

    def test_custom_exception_is_a_lookup_error(self):
        with self.assertRaises(LookupError):
            self.inv.remove("kiwi", 1)

    def test_value_error_message(self):
        with self.assertRaises(ValueError) as cm:
            self.inv.add("apple", -1)
        self.assertIn("quantity must be positive", str(cm.exception))

    def test_iteration_sorted_names(self):
        self.assertEqual(list(self.inv), ["apple", "pear"])
        self.assertIn("apple", self.inv.names())
        self.assertIsInstance(self.inv, Inventory)

    def test_repr(self):
        self.assertEqual(repr(self.inv), "Inventory(apple=3, pear=1)")


class ItemTest(unittest.TestCase):
    def test_dataclass_equality_and_fields(self):
        a = Item("pen", 1.25)
        self.assertEqual(a, Item("pen", 1.25))
        self.assertNotEqual(a, Item("pen", 1.5))
        self.assertEqual(a.name, "pen")
        self.assertEqual(repr(a), "Item(name='pen', price=1.25)")

    def test_total_price_almost_equal(self):
        items = [Item("a", 0.1), Item("b", 0.2)]
        self.assertAlmostEqual(solution.total_price(items), 0.3)
        self.assertTrue(math.isclose(solution.total_price(items, tax=0.5), 0.45))

    def test_cheapest_with_key(self):
        items = [Item("a", 3.0), Item("b", 1.0), Item("c", 2.0)]
        self.assertEqual(solution.cheapest(items, 2), [Item("b", 1.0), Item("c", 2.0)])
        self.assertEqual(solution.pick(items, key=lambda i: -i.price), Item("a", 3.0))


class FunctionsTest(unittest.TestCase):
    def test_subtests_of_primes(self):
        for n, expected in [(2, True), (9, False), (97, True), (1, False)]:
            with self.subTest(n=n):
                self.assertIs(solution.is_prime(n), expected)

    def test_generator_and_islice(self):
        self.assertEqual(list(itertools.islice(solution.primes(), 5)), [2, 3, 5, 7, 11])

    def test_printed_output(self):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            solution.report({"b": 2, "a": 1})
        self.assertEqual(buf.getvalue(), "a: 1\nb: 2\n")

    def test_nested_data(self):
        self.assertDictEqual(solution.by_initial(["ant", "bee", "asp"]),
                             {"a": [("ant", 3), ("asp", 3)], "b": [("bee", 3)]})
        self.assertSetEqual(solution.initials(["ant", "bee"]), {"a", "b"})

    def test_none_bytes_bigint(self):
        self.assertIsNone(solution.first_even([1, 3]))
        self.assertEqual(solution.first_even([1, 4]), 4)
        self.assertEqual(solution.xor_bytes(b"\x0f\xf0", b"\xff\xff"), b"\xf0\x0f")
        self.assertEqual(solution.square(10**30), 10**60)

    # The tests steer the submission's environment: the harness's
    # builtins.input and a patched module attribute must be what it sees.
    def test_input_mock_patch(self):
        with mock.patch("builtins.input", side_effect=["2", "5"]):
            self.assertEqual(solution.ask_product(), 10)

    def test_mock_patch_object_on_submission(self):
        with mock.patch.object(solution, "today", return_value="2024-02-29"):
            self.assertTrue(solution.is_leap_day())

    def test_hidden_word_count(self):
        self.assertEqual(solution.word_count("a b  a"), {"a": 2, "b": 1})


if __name__ == "__main__":
    unittest.main()
