# Three bugs, five of the eight declared tests pass: to_roman knows no
# subtractive forms (IIII, not IV), is_palindrome is case-sensitive, and
# parse_pairs keeps the values as strings.


def clamp(x, lo, hi):
    return max(lo, min(x, hi))


def to_roman(n):
    if not 1 <= n <= 3999:
        raise ValueError(n)
    out = ""
    for value, letter in ((1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"),
                          (5, "V"), (1, "I")):
        out += letter * (n // value)
        n %= value
    return out


def rle(s):
    out, prev, count = [], None, 0
    for c in s:
        if c == prev:
            count += 1
            continue
        if prev is not None:
            out.append(str(count) + prev)
        prev, count = c, 1
    if prev is not None:
        out.append(str(count) + prev)
    return "".join(out)


def dedupe(xs):
    return list(dict.fromkeys(xs))


def is_palindrome(s):
    t = [c for c in s if c.isalnum()]
    return t == t[::-1]


def parse_pairs(text):
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ValueError(part)
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out
