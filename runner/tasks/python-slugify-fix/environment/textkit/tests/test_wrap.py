import unittest

from textkit import wrap


class WrapTest(unittest.TestCase):
    def test_wrap(self):
        self.assertEqual(wrap("one two three four", 9), ["one two", "three", "four"])

    def test_long_word(self):
        self.assertEqual(wrap("a extraordinarily b", 5), ["a", "extraordinarily", "b"])
