# Text statistics -- a student's solution (does not load: missing colon).


def word_count(text)
    return len(text.split())


def word_frequencies(text):
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def most_common_word(text):
    counts = word_frequencies(text)
    return max(counts, key=counts.get) if counts else None


def average_word_length(text):
    words = text.split()
    return sum(len(w) for w in words) / len(words)
