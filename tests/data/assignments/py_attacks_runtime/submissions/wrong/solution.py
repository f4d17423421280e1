"""No attack, wrong everywhere: the control."""


def double(x):
    return x


def triple(x):
    return x


def mean(xs):
    return 0
