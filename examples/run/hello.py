"""A well-behaved program: prints who and where it is inside the sandbox."""
import os
import socket

print("hello from uid", os.getuid(), "pid", os.getpid(), "in", os.getcwd())
try:
    socket.create_connection(("127.0.0.1", 80), timeout=5)
    print("network: reachable (this should never happen)")
except OSError as e:
    print("network: closed (%s)" % e.strerror)
