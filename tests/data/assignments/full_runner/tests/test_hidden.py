def test_add():
    pass
