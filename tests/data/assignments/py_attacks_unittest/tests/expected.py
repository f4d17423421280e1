"""Expected values a hidden test imports after the submission (so a
submission that plants bytecode for this module at import would run in
the test process, were bytecode read from /work)."""
SUM = 5
