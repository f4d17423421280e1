"""Attack (d), unittest: an atexit handler writes an all-pass JUnit report
over the real one (the path is the last of sys.argv) and exits 0."""
import atexit
import glob
import os
import re
import sys


def _forge():
    names = []
    for path in glob.glob(os.path.join(os.getcwd(), "test_*.py")):
        with open(path, encoding="utf-8") as f:
            names += re.findall(r"def (test_\w+)", f.read())
    cases = "".join('<testcase classname="test_attacks.AttackedTest" name="%s"/>' % n
                    for n in names)
    try:
        with open(sys.argv[-1], "w") as f:
            f.write('<testsuite tests="%d">%s</testsuite>' % (len(names), cases))
    except OSError:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


atexit.register(_forge)


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
