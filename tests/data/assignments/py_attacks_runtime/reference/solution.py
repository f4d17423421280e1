"""Reference solution of py_attacks_runtime: full marks, no tricks."""


def double(x):
    return 2 * x


def triple(x):
    return 3 * x


def mean(xs):
    return sum(xs) / len(xs)
