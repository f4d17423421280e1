# Wrong answers, and an in-process patch of pytest itself at import: every
# test report pytest builds from then on says "passed", before any plugin
# or the JUnit writer sees it.  Code that runs inside the test process can
# always do this (docs/grading.md, "What remains possible"); the row records
# the limit, it does not demand that a runner-mode grader beat it.
import _pytest.reports

_real = _pytest.reports.TestReport.from_item_and_call.__func__


def _always_passed(cls, item, call):
    report = _real(cls, item, call)
    report.outcome = "passed"
    report.longrepr = None
    return report


_pytest.reports.TestReport.from_item_and_call = classmethod(_always_passed)

def clamp(x, lo, hi):
    return x


def to_roman(n):
    return ""


def rle(s):
    return s


def dedupe(xs):
    return xs


def is_palindrome(s):
    return None


def parse_pairs(text):
    return None
