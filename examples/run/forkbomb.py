"""A hostile program: forks forever.  Only ever run it inside `proctor run`."""
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
