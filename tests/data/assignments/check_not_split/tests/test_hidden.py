import solution


def test_double():
    assert solution.double(21) == 42


def test_money_equals_cents():
    # Compares an object of the submission's with a plain number: split, a
    # comparison between a proxy and the tests' own value is never the
    # submission's to decide, so this is False there.
    assert solution.Money(5) == 5
