import unittest

from textkit import slugify


class SlugTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_and_runs_of_spaces(self):
        self.assertEqual(slugify("  Sandboxes, benchmarked!  "), "sandboxes-benchmarked")

    def test_accents(self):
        self.assertEqual(slugify("Crème brûlée"), "creme-brulee")

    def test_separator(self):
        self.assertEqual(slugify("a b c", separator="_"), "a_b_c")

    def test_empty(self):
        self.assertEqual(slugify("!!!"), "")
