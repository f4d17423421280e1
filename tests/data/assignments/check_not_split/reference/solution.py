def double(x):
    return 2 * x


def ask():
    return double(int(input("a number? ")))
