"""(i) sys.exit(71) at import: 71 is the status a split harness ends with
when its program side never started (Proctor's failure, retried and never
charged), so the submission must not be able to end the harness with it."""
import sys

sys.exit(71)


def add(a, b):
    return a + b
