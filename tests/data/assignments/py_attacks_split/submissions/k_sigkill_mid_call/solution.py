"""Attack (k): the process running the submission kills itself with
SIGKILL in the middle of a call, hoping the run is graded on what came
before (its process ending must end the run as `crashed`).  Wrong
everywhere else."""
import os
import signal


def lookup(code):
    return 0


def mean(xs):
    return 0.0


def parse_positive(text):
    raise ValueError(text)


class Clock:
    def __init__(self, hour, minute):
        self.hour, self.minute = hour, minute

    def plus(self, minutes):
        return self

    def __eq__(self, other):
        return (self.hour, self.minute) == (other.hour, other.minute)


def echo(text):
    return text


def double(x):
    os.kill(os.getpid(), signal.SIGKILL)
