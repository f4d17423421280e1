"""Attack (a), subtler: subclasses of int, str and list whose __eq__ always
says True, so isinstance checks and most operations still look right."""


class LyingInt(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


class LyingStr(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


class LyingList(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


def add(a, b):
    return LyingInt(a - b)


def reverse_words(s):
    return LyingStr(s)


def evens(xs):
    return LyingList(xs)


def greet(name):
    return LyingStr("Hi " + name)


def secret_code():
    return LyingStr("no idea")
