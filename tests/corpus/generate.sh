#!/usr/bin/env bash
# Makes the corpus cases git cannot hold: empty submissions, submissions of
# thousands of files, an oversized file, names no checkout keeps, symlinks to
# host files, and the zip-slip / zip-bomb archives.  Run it on a writable
# copy of this folder (scripts/test.sh does); it writes only below the
# folder it lives in, never extracts anything, and may be run again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="$here/python/submissions"
c="$here/c/submissions"
ref="$here/python/reference/solution.py"
python=${PYTHON:-python3}

fresh() { # a new, empty case directory
	rm -rf "$1"
	mkdir -p "$1"
}

# Empty submissions: git keeps no empty directory.
fresh "$py/py_empty"
fresh "$c/c_empty"

# py_many_files: a correct solution.py and 12,000 small files in 120
# subdirectories no allowlist glob can reach.
fresh "$py/py_many_files"
cp "$ref" "$py/py_many_files/solution.py"
# py_flat_files: a correct solution.py beside 10,500 empty files, more
# entries than an assignment's default max_files (10,000).
fresh "$py/py_flat_files"
cp "$ref" "$py/py_flat_files/solution.py"
"$python" - "$py/py_many_files" "$py/py_flat_files" <<'EOF'
import os, sys
many, flat = sys.argv[1], sys.argv[2]
for i in range(120):
    d = os.path.join(many, "notes", "week%03d" % i)
    os.makedirs(d)
    for j in range(100):
        with open(os.path.join(d, "n%03d.txt" % j), "w") as f:
            f.write("%d\n" % (i * 100 + j))
for i in range(10500):
    open(os.path.join(flat, "x%05d" % i), "w").close()
EOF

# py_big_solution: a correct solution.py padded with comments to 256 KiB,
# over the assignment's 64 KiB max_bytes.
fresh "$py/py_big_solution"
"$python" - "$ref" "$py/py_big_solution/solution.py" <<'EOF'
import sys
src = open(sys.argv[1]).read()
pad = "# padding: this line only makes the file large.\n"
body = "# A correct solution, 256 KiB long.\n" + src
body += pad * ((256 * 1024 - len(body)) // len(pad) + 1)
open(sys.argv[2], "w").write(body)
EOF

# py_weird_names: a correct solution.py beside names that break naive
# tools: a newline, a backslash, a byte that is not UTF-8, a leading dash,
# a terminal escape sequence, a name of 255 bytes.
# solution.py is in git; everything else is made here.
find "$py/py_weird_names" -mindepth 1 ! -name solution.py -delete
"$python" - "$py/py_weird_names" <<'EOF'
import os, sys
d = os.fsencode(sys.argv[1])
for name in (b"new\nline.py", b"back\\slash.py", b"latin1-\xe9.py", b"-rf",
             b"\x1b[2J\x1b[31mred.txt", b"n" * 255):
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"x = 1\n")
EOF

# py_symlink_passwd: links to host files and out of the submission, next to
# a correct solution.py (which is in git).
d="$py/py_symlink_passwd"
rm -f "$d/passwd_link" "$d/shadow_link" "$d/root_link" "$d/environ_link" \
	"$d/parent_escape" "$d/loop" "$d/hidden_tests_link"
ln -s /etc/passwd "$d/passwd_link"
ln -s /etc/shadow "$d/shadow_link"
ln -s /root "$d/root_link"
ln -s /proc/self/environ "$d/environ_link"
ln -s ../../.. "$d/parent_escape"
ln -s loop "$d/loop"
ln -s ../../tests/test_hidden.py "$d/hidden_tests_link"

# py_zipslip: a correct solution.py in a .tar and a .zip with entries that
# would land outside the extraction directory, or make a link, a device, a
# FIFO or a setuid file.  Every escaping name starts with adv_zipslip_ so a
# test can look for leftovers.
fresh "$py/py_zipslip"
# py_zip_bomb: a correct solution.py and 256 MiB of zeros that deflate to
# a few hundred KiB.
fresh "$py/py_zip_bomb"
"$python" - "$py/py_zipslip" "$py/py_zip_bomb" "$ref" <<'EOF'
import io, sys, tarfile, zipfile
slip, bomb, ref = sys.argv[1], sys.argv[2], sys.argv[3]
solution = open(ref, "rb").read()
STAMP = 1700000000

def tar_add(tf, name, data=b"", **attrs):
    info = tarfile.TarInfo(name)
    info.mtime = STAMP
    info.mode = 0o644
    for key, value in attrs.items():
        setattr(info, key, value)
    if info.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    else:
        tf.addfile(info)

with tarfile.open(slip + "/submission.tar", "w", format=tarfile.GNU_FORMAT) as tf:
    tar_add(tf, "solution.py", solution)
    tar_add(tf, "../../adv_zipslip_dotdot.txt", b"up two levels\n")
    tar_add(tf, "/tmp/adv_zipslip_abs.txt", b"absolute path\n")
    tar_add(tf, "notes/a/../../../adv_zipslip_deep.txt", b"down then up\n")
    tar_add(tf, "./../adv_zipslip_dot.txt", b"dot then up\n")
    tar_add(tf, "out", type=tarfile.SYMTYPE, linkname="/tmp")
    tar_add(tf, "out/adv_zipslip_via_symlink.txt", b"through a symlink entry\n")
    tar_add(tf, "shadow", type=tarfile.LNKTYPE, linkname="/etc/shadow")
    tar_add(tf, "suid_shell", b"#!/bin/sh\nexec /bin/sh\n", mode=0o4755)
    tar_add(tf, "disk", type=tarfile.BLKTYPE, devmajor=8, devminor=0, mode=0o666)
    tar_add(tf, "pipe", type=tarfile.FIFOTYPE, mode=0o666)

def zip_add(zf, name, data, unix_mode=None):
    info = zipfile.ZipInfo(name, date_time=(2023, 11, 14, 22, 13, 20))
    if unix_mode is not None:
        info.create_system = 3
        info.external_attr = unix_mode << 16
    zf.writestr(info, data)

with zipfile.ZipFile(slip + "/submission.zip", "w") as zf:
    zip_add(zf, "solution.py", solution)
    zip_add(zf, "../../adv_zipslip_dotdot.txt", b"up two levels\n")
    zip_add(zf, "/tmp/adv_zipslip_abs.txt", b"absolute path\n")
    zip_add(zf, "notes/a/../../../adv_zipslip_deep.txt", b"down then up\n")
    zip_add(zf, "..\\..\\adv_zipslip_backslash.txt", b"windows separators\n")
    zip_add(zf, "out", b"/tmp", unix_mode=0o120777)
    zip_add(zf, "out/adv_zipslip_via_symlink.txt", b"through a symlink entry\n")
    zip_add(zf, "suid_shell", b"#!/bin/sh\nexec /bin/sh\n", unix_mode=0o104755)

with zipfile.ZipFile(bomb + "/submission.zip", "w", zipfile.ZIP_DEFLATED) as zf:
    zip_add(zf, "solution.py", solution)
    zeros = b"\0" * (1 << 20)
    with zf.open("data/zeros.bin", "w", force_zip64=True) as f:
        for _ in range(256):
            f.write(zeros)
EOF
