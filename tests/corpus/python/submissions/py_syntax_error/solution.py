# A syntax error: py_compile refuses it in the build step.


def clamp(x, lo, hi)
    return max(lo, min(x, hi))
