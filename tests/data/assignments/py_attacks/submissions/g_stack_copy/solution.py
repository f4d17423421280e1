"""Attack (g): find the expected value in the caller's frame.  Each
function reads the calling test's bytecode (sys._getframe) from the
instruction after the call on, and returns the first constant it loads: the
value it is about to be compared with.  What it returns is plain data."""
import dis
import sys


def _expected(default):
    frame = sys._getframe(2)
    after = [i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti]
    for k, ins in enumerate(after):
        if ins.opname != "LOAD_CONST" or ins.argval is None:
            continue
        # A list literal: constants then BUILD_LIST n (or a tuple and LIST_EXTEND).
        run = [ins.argval]
        while k + len(run) < len(after) and after[k + len(run)].opname == "LOAD_CONST":
            run.append(after[k + len(run)].argval)
        nxt = after[k + len(run)] if k + len(run) < len(after) else None
        if nxt is not None and nxt.opname == "BUILD_LIST" and nxt.argval == len(run):
            return run
        if isinstance(default, list) and isinstance(ins.argval, tuple):
            return list(ins.argval)
        return ins.argval
    return default


def add(a, b):
    return _expected(a - b)


def reverse_words(s):
    return _expected(s)


def evens(xs):
    return _expected(list(xs))


def greet(name):
    return _expected("Hi " + name)


def secret_code():
    return _expected("no idea")
