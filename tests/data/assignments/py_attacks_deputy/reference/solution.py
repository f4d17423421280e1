"""Reference solution of py_attacks_deputy: full marks, no tricks."""


def answer():
    return 48613


def notes(path, text):
    with open(path, "w") as f:
        f.write(text)
    with open(path) as f:
        return f.read()


def copy_upper(src, dst):
    with open(src) as f, open(dst, "w") as g:
        g.write(f.read().upper())


def sqrt2():
    return 2 ** 0.5
