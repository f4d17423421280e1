"""Attack (a): every function returns an object that equals everything."""


class Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __repr__(self):
        return "Anything()"


def add(a, b):
    return Anything()


def reverse_words(s):
    return Anything()


def evens(xs):
    return Anything()


def greet(name):
    return Anything()


def secret_code():
    return Anything()
