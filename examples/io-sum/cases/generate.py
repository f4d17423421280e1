#!/usr/bin/env python3
"""Writes cases/big.in: 100,000 integers in 0..999, twenty per line.

A fixed linear congruential generator, so the file is the same on every
machine. The .out files are the reference solution's output:
    gcc -O2 -o /tmp/ref reference/solution.c
    for f in cases/*.in; do /tmp/ref < "$f" > "${f%.in}.out"; done
"""
import os

state = 20240901
numbers = []
for _ in range(100000):
    state = (state * 1103515245 + 12345) % 2**31
    numbers.append((state >> 16) % 1000)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "big.in")
with open(path, "w") as f:
    for i in range(0, len(numbers), 20):
        f.write(" ".join(str(n) for n in numbers[i:i + 20]) + "\n")
