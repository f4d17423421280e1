"""A JUnit XML report for `python3 -m unittest`, which writes none.

The test step is
    python3 -m unittest junit_report test_hidden {report}
unittest imports the names in order: this module first, so before any test
runs it (1) makes the loader skip the last name, the report path Proctor
substituted for {report}, and (2) puts a runner in place of
unittest.TextTestRunner that runs the tests as usual and then writes every
test's outcome to that path.  It is a hidden file like the tests: in a
split run it lives in the harness process with them, where the submission
cannot reach it.
"""
import sys
import unittest
import unittest.loader
import unittest.runner
from xml.sax.saxutils import quoteattr

_REPORT = sys.argv[-1] if len(sys.argv) > 1 and sys.argv[-1].startswith("/") else None
_load_name = unittest.loader.TestLoader.loadTestsFromName


def _load_tests_from_name(self, name, module=None):
    if name == _REPORT:
        return self.suiteClass([])
    return _load_name(self, name, module)


unittest.loader.TestLoader.loadTestsFromName = _load_tests_from_name


class _Result(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = []  # (test, kind, message)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.append((test, "passed", ""))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes.append((test, "failure", self._exc_info_to_string(err, test)))

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes.append((test, "error", self._exc_info_to_string(err, test)))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes.append((test, "skipped", reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcomes.append((test, "passed", ""))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcomes.append((test, "failure", "unexpected success"))

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "failure" if issubclass(err[0], test.failureException) else "error"
            self.outcomes.append((test, kind, self._exc_info_to_string(err, subtest)))


def _write(path, outcomes):
    # One testcase per test: a failing subtest makes its test fail.
    merged = {}
    for test, kind, message in outcomes:
        key = (type(test).__module__ + "." + type(test).__qualname__,
               getattr(test, "_testMethodName", str(test)))
        old = merged.get(key)
        if old is None or (old[0] == "passed" and kind != "passed"):
            merged[key] = (kind, message)
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<testsuite name="unittest" tests="%d">'
             % len(merged)]
    for (classname, name), (kind, message) in merged.items():
        lines.append("<testcase classname=%s name=%s>" % (quoteattr(classname), quoteattr(name)))
        if kind != "passed":
            lines.append("<%s message=%s/>" % (kind, quoteattr(message[-2000:])))
        lines.append("</testcase>")
    lines.append("</testsuite>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


class _JUnitRunner(unittest.runner.TextTestRunner):
    resultclass = _Result

    def run(self, test):
        result = super().run(test)
        if _REPORT:
            _write(_REPORT, result.outcomes)
        return result


unittest.runner.TextTestRunner = _JUnitRunner
