# Text statistics -- a student's solution (partial: splits on spaces only,
# and a tie goes to the word seen first instead of the alphabetically first).


def word_count(text):
    return len(text.split())


def word_frequencies(text):
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def most_common_word(text):
    counts = word_frequencies(text)
    best = None
    for word in counts:
        if best is None or counts[word] > counts[best]:
            best = word
    if best is not None and not best.isalpha():
        return None
    return best


def average_word_length(text):
    words = text.split()
    if not words:
        raise ValueError("empty text")
    return sum(len(w) for w in words) / len(words)
