#!/usr/bin/env python3
"""Write a C file defining `const char NAME[]` with the bytes of a source
file, so Proctor carries its Python runtime inside the binary (build time)."""
import sys

src, out, name = sys.argv[1:4]
data = open(src, "rb").read()
with open(out, "w") as f:
    f.write("/* Generated from %s by src/grade/runtimes/python/embed.py: do not edit. */\n" % src.split("/")[-1])
    f.write("const char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        f.write("\t" + ", ".join(str(b) for b in data[i:i + 16]) + ",\n")
    f.write("\t0};\n")
    f.write("const unsigned long %s_len = %d;\n" % (name, len(data)))
