# Text statistics -- a student's solution (correct).
import re


def word_count(text):
    return len(re.findall(r"[a-zA-Z]+", text))


def word_frequencies(text):
    counts = {}
    for word in re.findall(r"[a-zA-Z]+", text):
        word = word.lower()
        if word in counts:
            counts[word] += 1
        else:
            counts[word] = 1
    return counts


def most_common_word(text):
    counts = word_frequencies(text)
    best = None
    for word in sorted(counts):
        if best is None or counts[word] > counts[best]:
            best = word
    return best


def average_word_length(text):
    found = re.findall(r"[a-zA-Z]+", text)
    if len(found) == 0:
        raise ValueError("empty text")
    total = 0
    for word in found:
        total += len(word)
    return total / len(found)
