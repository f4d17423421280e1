"""Text statistics: reference solution."""


def words(text):
    """The words of text, lower-cased: runs of letters, anything else separates them."""
    result = []
    current = ""
    for ch in text:
        if ch.isalpha():
            current += ch.lower()
        elif current:
            result.append(current)
            current = ""
    if current:
        result.append(current)
    return result


def word_count(text):
    return len(words(text))


def word_frequencies(text):
    freq = {}
    for w in words(text):
        freq[w] = freq.get(w, 0) + 1
    return freq


def most_common_word(text):
    """The most frequent word; ties go to the alphabetically first; None if there are no words."""
    freq = word_frequencies(text)
    if not freq:
        return None
    return min(freq, key=lambda w: (-freq[w], w))


def average_word_length(text):
    ws = words(text)
    if not ws:
        raise ValueError("no words in text")
    return sum(len(w) for w in ws) / len(ws)
