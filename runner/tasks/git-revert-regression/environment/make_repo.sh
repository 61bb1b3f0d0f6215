# Builds the task's repository: five commits, the third one breaks `divide`.
set -euo pipefail
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.invalid
export GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.invalid
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
mkdir -p "$1" && cd "$1"
git init -q -b main .
git config user.name dev && git config user.email dev@example.invalid
cat > calc.py <<'PY'
def add(a, b):
    return a + b


def divide(a, b):
    if b == 0:
        raise ZeroDivisionError("divide by zero")
    return a / b
PY
cat > test_calc.py <<'PY'
import unittest

from calc import add, divide


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_divide(self):
        self.assertEqual(divide(7, 2), 3.5)
        with self.assertRaises(ZeroDivisionError):
            divide(1, 0)
PY
printf "__pycache__/\n" > .gitignore
git add . && git commit -q -m "calc: add and divide with tests"
printf '\n\ndef sub(a, b):\n    return a - b\n' >> calc.py
git commit -q -am "calc: sub"
sed -i 's|return a / b|return a // b|' calc.py
git commit -q -am "calc: faster divide"
printf '\n\ndef mul(a, b):\n    return a * b\n' >> calc.py
git commit -q -am "calc: mul"
echo "# calc" > README.md && git add README.md && git commit -q -m "README"
