"""No attack: wrong everywhere; the control for the attacks (0 in both modes)."""


def add(a, b):
    return a - b


def reverse_words(s):
    return s


def evens(xs):
    return xs


def greet(name):
    return "Hi " + name


def secret_code():
    return "no idea"
