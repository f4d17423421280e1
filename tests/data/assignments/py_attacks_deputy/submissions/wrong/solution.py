"""No attack, wrong everywhere: the control."""


def answer():
    return 0


def notes(path, text):
    return ""
