"""No directory the harness imports from or runs from, nor its report
directory, is the program's to write (issue 22).  The program's uid is the
owner of the submission's solution.py.  A directory fails when the program
owns it or may write it; each of its ancestors fails when the program owns
it, or may write it and it is not sticky (a sticky /tmp is fine: the
program cannot rename what it does not own).  In one process the harness is
the program, so only the directories Proctor put are checked.  /work is
left out: it is the submission's own directory (root's, sticky), where the
split runtime's finder decides what the harness may import
(docs/grading.md, "Python: split by default")."""
import os
import stat
import sys

import solution  # noqa: F401 -- the submission is loaded as in any test


def _program():
    st = os.stat("/work/solution.py")
    return st.st_uid, st.st_gid


def _writable(st, uid, gid):
    m = st.st_mode
    return bool((st.st_uid == uid and m & stat.S_IWUSR) or
                (st.st_gid == gid and m & stat.S_IWGRP) or m & stat.S_IWOTH)


def _problems(path, uid, gid):
    out = []
    path = os.path.abspath(path)
    # One that does not exist (a pycache prefix nothing was written to
    # yet): the program must not be able to make it.
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.stat(path)
    if st.st_uid == uid or _writable(st, uid, gid):
        out.append("%s: owner %d mode %o" % (path, st.st_uid, stat.S_IMODE(st.st_mode)))
    parent = os.path.dirname(path)
    while True:
        pst = os.stat(parent)
        if pst.st_uid == uid or (_writable(pst, uid, gid) and not pst.st_mode & stat.S_ISVTX):
            out.append("%s (a parent of %s): owner %d mode %o"
                       % (parent, path, pst.st_uid, stat.S_IMODE(pst.st_mode)))
        if parent == "/":
            return out
        parent = os.path.dirname(parent)


def test_harness_paths_are_not_the_programs(pytestconfig):
    uid, gid = _program()
    split = os.getuid() != uid
    dirs = [p for p in sys.path if p and os.path.isdir(p)]
    dirs += [p for p in os.environ.get("PATH", "").split(":") if p and os.path.isdir(p)]
    if not split:
        # One process: only what Proctor put for the runtime.
        dirs = [p for p in dirs if "/.proctor-" in p]
    # Bytecode the harness reads (a template's pycache prefix).
    if sys.pycache_prefix:
        dirs.append(sys.pycache_prefix)
    report = pytestconfig.getoption("xmlpath")
    if split and report:
        dirs.append(os.path.dirname(os.path.abspath(report)))
    problems = []
    for d in sorted(set(dirs)):
        if d == "/work" or d.startswith("/work/"):
            continue
        problems += _problems(d, uid, gid)
    assert not problems, "the program may write on the harness's path:\n" + "\n".join(problems)
