"""Reference solution of py_attacks_deputy: full marks, no tricks."""


def answer():
    return 48613


def notes(path, text):
    with open(path, "w") as f:
        f.write(text)
    with open(path) as f:
        return f.read()
