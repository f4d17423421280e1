"""Hidden tests of the shapes real pytest suites have (issue 12): each must
pass against the reference solution whether the submission runs in the
tests' process (test.in_process: true) or in a process of its own."""
import io
import itertools
import math
import random

import pytest

import helpers
import solution
from solution import BankAccount, Point, Stack


# ---- classes with methods, attributes, properties, class/static methods ----

def test_stack_push_pop():
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.pop() == 2
    assert s.pop() == 1


def test_stack_len_and_peek():
    s = Stack()
    assert len(s) == 0
    assert s.empty
    s.push("a")
    s.push("b")
    assert len(s) == 2
    assert s.peek() == "b"
    assert not s.empty
    assert s.items == ["a", "b"]


def test_stack_class_constant():
    assert Stack.MAX_SIZE == 5
    assert Stack().MAX_SIZE == 5


def test_stack_classmethod_and_staticmethod():
    s = Stack.from_list([3, 4, 5])
    assert s.pop() == 5
    assert len(s) == 2
    assert Stack.describe() == "LIFO"


def test_stack_repr_and_str():
    s = Stack.from_list([1, 2])
    assert repr(s) == "Stack([1, 2])"
    assert str(s) == "Stack([1, 2])"
    assert f"{s}" == "Stack([1, 2])"


def test_stack_iteration_and_indexing():
    s = Stack.from_list([1, 2, 3])
    assert list(s) == [3, 2, 1]  # top first
    assert s[0] == 3
    assert s[-1] == 1


def test_isinstance_of_submission_class():
    s = Stack()
    assert isinstance(s, Stack)
    assert isinstance(Stack.from_list([1]), solution.Stack)
    assert not isinstance(BankAccount("x"), Stack)


def test_account_property_and_history():
    acct = BankAccount("Ann", 10)
    acct.deposit(5)
    acct.withdraw(3)
    assert acct.balance == 12
    assert acct.owner == "Ann"
    assert acct.history == [("deposit", 5), ("withdraw", 3)]
    assert str(acct) == "Ann: 12"


def test_attribute_assignment():
    acct = BankAccount("Ann")
    acct.nickname = "annie"
    assert acct.nickname == "annie"
    assert acct.describe() == "Ann (annie): 0"


def test_two_instances_are_independent():
    a, b = BankAccount("A", 1), BankAccount("B", 2)
    a.deposit(10)
    assert (a.balance, b.balance) == (11, 2)


# ---- exceptions ----

def test_parse_int_raises_value_error():
    assert solution.parse_int(" 42 ") == 42
    with pytest.raises(ValueError, match=r"not an integer: 'x1'"):
        solution.parse_int("x1")


def test_pop_empty_raises_from_method():
    with pytest.raises(IndexError, match="empty stack"):
        Stack().pop()


def test_custom_exception_caught_by_class():
    acct = BankAccount("Ann", 10)
    with pytest.raises(solution.InsufficientFunds, match="balance 10 < 20"):
        acct.withdraw(20)
    assert acct.balance == 10


def test_custom_exception_derives_from_builtin():
    # NegativeAmount derives from ValueError in the submission.
    with pytest.raises(ValueError, match="must be positive"):
        BankAccount("Ann").deposit(-1)
    with pytest.raises(solution.NegativeAmount):
        BankAccount("Ann").deposit(0)


def test_custom_exception_caught_as_exception():
    try:
        BankAccount("Ann", 1).withdraw(2)
    except Exception as exc:
        assert type(exc).__name__ == "InsufficientFunds"
        assert "balance 1 < 2" in str(exc)
    else:
        pytest.fail("no exception")


def test_stack_full_custom_exception():
    s = Stack.from_list([1, 2, 3, 4, 5])
    with pytest.raises(solution.StackFull):
        s.push(6)
    assert len(s) == 5


# ---- generators and iterators ----

def test_generator_to_list():
    assert list(solution.countdown(3)) == [3, 2, 1]
    assert list(solution.countdown(0)) == []
    assert sum(solution.countdown(4)) == 10


def test_generator_next_and_stop():
    g = solution.countdown(2)
    assert next(g) == 2
    assert next(g) == 1
    with pytest.raises(StopIteration):
        next(g)


def test_infinite_generator_islice():
    assert list(itertools.islice(solution.fibonacci(), 10)) == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]


def test_custom_iterator_for_loop():
    seen = []
    for x in solution.Squares(4):
        seen.append(x)
    assert seen == [0, 1, 4, 9]
    it = iter(solution.Squares(1))
    assert next(it) == 0


def test_membership_in_custom_container():
    s = Stack.from_list(["a", "b"])
    assert "a" in s
    assert "z" not in s


# ---- dataclasses ----

def test_dataclass_fields():
    p = Point(1.5, -2)
    assert p.x == 1.5
    assert p.y == -2


def test_dataclass_equality_of_two_submission_objects():
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(2, 1)
    assert solution.midpoint(Point(0, 0), Point(4, 6)) == Point(2.0, 3.0)


def test_dataclass_repr():
    assert repr(Point(1, 2)) == "Point(x=1, y=2)"


def test_dataclass_in_set_and_ordering():
    pts = {Point(1, 2), Point(1, 2), Point(0, 5)}
    assert len(pts) == 2
    assert Point(0, 5) < Point(1, 2)
    assert sorted([Point(3, 1), Point(1, 9)]) == [Point(1, 9), Point(3, 1)]
    assert max([Point(3, 1), Point(1, 9)], key=lambda p: p.y) == Point(1, 9)


def test_list_of_dataclasses_equality():
    assert solution.diagonal(3) == [Point(0, 0), Point(1, 1), Point(2, 2)]


def test_dataclass_method_returns_plain_float():
    d = Point(0, 0).distance_to(Point(3, 4))
    assert d == 5.0
    assert isinstance(d, float)


# ---- nested data ----

def test_dict_of_lists_of_tuples():
    assert solution.index_words("a b\nb a a") == {
        "a": [(1, 1), (2, 2), (2, 3)],
        "b": [(1, 2), (2, 1)],
    }


def test_sets_and_frozensets():
    assert solution.letters("banana") == {"a", "b", "n"}
    groups = solution.anagram_groups(["tea", "eat", "tan", "nat", "x"])
    assert groups == {
        frozenset("aet"): ["eat", "tea"],
        frozenset("ant"): ["nat", "tan"],
        frozenset("x"): ["x"],
    }
    assert isinstance(next(iter(groups)), frozenset)


def test_sorted_output():
    words = ["pear", "Apple", "fig"]
    assert solution.sorted_unique(words + ["fig"]) == ["Apple", "fig", "pear"]
    assert sorted(solution.letters("cab")) == ["a", "b", "c"]


def test_nested_input_is_not_shared():
    data = {"xs": [3, 1, 2]}
    assert solution.sorted_copy(data) == {"xs": [1, 2, 3]}
    assert data == {"xs": [3, 1, 2]}


# ---- floats ----

def test_mean_approx():
    assert solution.mean([1, 2, 2]) == pytest.approx(5 / 3)
    assert solution.mean([0.1, 0.2]) == pytest.approx(0.15)


def test_sqrt_isclose():
    assert math.isclose(solution.sqrt_newton(2), math.sqrt(2), rel_tol=1e-9)
    assert solution.sqrt_newton(1e6) == pytest.approx(1000.0, rel=1e-12)


def test_stats_dict_approx():
    assert solution.stats([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(
        {"mean": 5.0, "stdev": 2.0, "min": 2, "max": 9})


def test_complex_roots():
    r1, r2 = solution.roots(1, 0, 1)
    assert {r1, r2} == {1j, -1j}
    assert solution.roots(1, -3, 2) == pytest.approx((2, 1))


def test_special_floats():
    assert math.isinf(solution.safe_div(1, 0))
    assert math.isnan(solution.safe_div(0, 0))
    assert solution.safe_div(1, 4) == 0.25


# ---- printed output ----

def test_print_table_capsys(capsys):
    solution.print_table([("apple", 3), ("fig", 12)])
    out, err = capsys.readouterr()
    assert out == "apple     3\nfig      12\n"
    assert err == ""


def test_warn_goes_to_stderr(capsys):
    solution.warn("low balance")
    captured = capsys.readouterr()
    assert captured.err == "warning: low balance\n"
    assert captured.out == ""


def test_print_and_return(capsys):
    assert solution.shout("hi") == "HI"
    assert capsys.readouterr().out == "HI!\n"
    assert solution.shout("yo") == "YO"
    assert capsys.readouterr().out == "YO!\n"


# ---- state across calls ----

def test_module_counter_across_calls():
    solution.reset_tickets()
    assert solution.next_ticket() == 1
    assert solution.next_ticket() == 2
    assert solution.next_ticket() == 3


def test_module_constant():
    assert solution.VERSION == "1.0"
    assert solution.LIMITS == {"min": 0, "max": 10}


def test_module_attribute_reflects_state():
    solution.reset_tickets()
    solution.next_ticket()
    solution.next_ticket()
    assert solution.issued == 2


# ---- helper modules next to the tests ----

def test_helper_module_data():
    words = helpers.load_words()
    assert solution.group_by_length(words) == helpers.expected_lengths(words)


def test_helper_module_assertion():
    helpers.assert_sorted(solution.sorted_unique(helpers.load_words()))


# ---- callables from the tests ----

def test_sort_by_lambda_key():
    items = [("a", 3), ("b", 1), ("c", 2)]
    assert solution.sort_by(items, key=lambda t: t[1]) == [("b", 1), ("c", 2), ("a", 3)]
    assert solution.sort_by(items, key=lambda t: -t[1], reverse=True) == [
        ("b", 1), ("c", 2), ("a", 3)]


def test_sort_by_builtin_key():
    assert solution.sort_by(["ccc", "a", "bb"], key=len) == ["a", "bb", "ccc"]
    assert solution.sort_by(["b", "A", "c"], key=str.lower) == ["A", "b", "c"]


def test_count_if_predicate():
    calls = []

    def is_even(n):
        calls.append(n)
        return n % 2 == 0

    assert solution.count_if([1, 2, 3, 4], is_even) == 2
    assert calls == [1, 2, 3, 4]  # the callable ran here, with the state it closes over


def test_callback_exception_propagates():
    def boom(x):
        raise KeyError(x)

    with pytest.raises(KeyError):
        solution.count_if([1], boom)


# ---- plain values of every kind ----

def test_bytes_roundtrip():
    assert solution.to_bytes("héllo") == "héllo".encode("utf-8")
    assert solution.checksum(b"\x00\xff\x10") == 0x10F
    assert solution.from_bytes(b"caf\xc3\xa9") == "café"


def test_big_ints():
    assert solution.factorial(30) == math.factorial(30)
    assert solution.add(2**200, 1) == 2**200 + 1
    assert solution.add(-(2**70), 0) == -(2**70)


def test_none_result():
    assert solution.find_index([1, 2, 3], 9) is None
    assert solution.find_index([1, 2, 3], 3) == 2


def test_default_and_keyword_arguments():
    assert solution.greet("Ann") == "Hello, Ann!"
    assert solution.greet("Ann", greeting="Hi") == "Hi, Ann!"
    assert solution.greet(name="Bob", punctuation="?") == "Hello, Bob?"


def test_star_args_and_kwargs():
    assert solution.total() == 0
    assert solution.total(1, 2, 3) == 6
    assert solution.total(*range(5)) == 10
    assert solution.describe_call(1, "x", a=None, b=[1]) == "args=(1, 'x') kwargs={'a': None, 'b': [1]}"
    assert solution.merge({"a": 1}, {"b": 2}, c=3) == {"a": 1, "b": 2, "c": 3}


def test_tuple_and_bool_results():
    assert solution.divmod_pair(17, 5) == (3, 2)
    q, r = solution.divmod_pair(-7, 2)
    assert (q, r) == (-4, 1)
    assert solution.is_palindrome("Abba") is True
    assert solution.is_palindrome("abc") is False


def test_unicode_strings():
    assert solution.reverse("naïve ☃") == "☃ evïan"
    assert len(solution.reverse("\U0001F600x")) == 2


@pytest.mark.parametrize("a,b,expected", [(1, 2, 3), (-5, 5, 0)])
def test_parametrized_add(a, b, expected):
    assert solution.add(a, b) == expected


@pytest.fixture
def funded_account():
    acct = BankAccount("Zed", 100)
    acct.withdraw(40)
    return acct


def test_fixture_built_object(funded_account):
    assert funded_account.balance == 60
    funded_account.deposit(1)
    assert funded_account.history[-1] == ("deposit", 1)


# ---- the tests steer the submission's environment ----
# Common in introductory courses; each needs more than values crossing: the
# harness's builtins.input, sys.stdin, random state or a patched module
# attribute must be what the submission's code sees.

def test_input_builtin_monkeypatched(monkeypatch):
    answers = iter(["3", "4"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert solution.ask_sum() == 7


def test_stdin_replaced(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("1 2 3\n4\n"))
    assert solution.sum_stdin() == 10


def test_monkeypatch_submission_attribute(monkeypatch):
    monkeypatch.setattr(solution, "roll", lambda: 6)
    assert solution.roll_twice() == 12


def test_random_seed_in_tests():
    random.seed(7)
    expected = [random.randint(1, 6) for _ in range(5)]
    random.seed(7)
    assert solution.roll_dice(5) == expected


def test_context_manager_and_callable_instance():
    with solution.Recorder() as rec:
        rec("a")
        rec("b")
    assert rec.calls == ["a", "b"]
    assert rec.closed


def test_hidden_word_lengths():
    assert solution.group_by_length(["aa", "b", "cc", "a"]) == {1: ["a", "b"], 2: ["aa", "cc"]}
