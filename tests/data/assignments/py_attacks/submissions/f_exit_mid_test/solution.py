"""Attack (f): leave in the middle of a test, hoping that an early exit
reads as success: sys.exit(0) in one function, os._exit(0) in another."""
import os
import sys


def add(a, b):
    sys.exit(0)


def reverse_words(s):
    return s


def evens(xs):
    sys.stdout.flush()
    os._exit(0)


def greet(name):
    return "Hi " + name


def secret_code():
    return "no idea"
