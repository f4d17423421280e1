"""Reference solution of py_attacks: full marks, no tricks."""


def add(a, b):
    return a + b


def reverse_words(s):
    return " ".join(reversed(s.split()))


def evens(xs):
    return [x for x in xs if x % 2 == 0]


def greet(name):
    return "Hello, %s!" % name


def secret_code():
    return "AARDVARK-7c1f-93"
