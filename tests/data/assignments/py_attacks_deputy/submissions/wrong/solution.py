"""No attack, wrong everywhere: the control."""


def answer():
    return 0


def notes(path, text):
    return ""


def copy_upper(src, dst):
    pass


def sqrt2():
    return 0
