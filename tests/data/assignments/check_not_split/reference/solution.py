def double(x):
    return 2 * x


class Money:
    """Compares equal to a plain number of cents, too."""

    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        return self.cents == (other.cents if isinstance(other, Money) else other)
