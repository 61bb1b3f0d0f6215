"""The stage classifier against labelled commands, and `bench classify`."""

import io
import json

import pytest
from django.core.management import call_command

from runner.traces.classify import BUILD, INSTALL, READ, TEST, WRITE, classify

LABELLED = [
    # Read: navigation, search, read-only inspection.
    ("ls -la", READ),
    ("ls toolz toolz/tests", READ),
    ("cd src && ls", READ),
    ("pwd", READ),
    ("cat setup.py", READ),
    ("head -50 README.rst", READ),
    ("tail -n 20 CHANGES", READ),
    ("sed -n '1,40p' six.py", READ),
    ("sed -n '/^def f/,/^def g/p' mod.py", READ),
    ("grep -rn 'def foo' src/", READ),
    ("grep -n pattern file.py 2>/dev/null", READ),
    ("rg -n TODO", READ),
    ("find . -name '*.py' | head", READ),
    ("find . -type f -name '*.c' | xargs grep -l main", READ),
    ("git status", READ),
    ("git status --short | head", READ),
    ("git diff", READ),
    ("git --no-pager diff HEAD -- six.py", READ),
    ("git log --oneline -5", READ),
    ("git show HEAD:setup.py", READ),
    ("git -C repo log", READ),
    ("wc -l *.py", READ),
    ("echo $PATH", READ),
    ("python3 --version", READ),
    ("which python3", READ),
    ("tree -L 2", READ),
    ("awk '{print $1}' data.txt", READ),
    ("cat <<'EOF'\nnotes only\nEOF", READ),
    ("sort file | uniq -c", READ),
    ("diff a.txt b.txt", READ),
    ("nm build/liblz4.a | grep -c ' T '", READ),
    ("./build/roundtrip", READ),
    ("tar -tzf dist.tar.gz", READ),
    ("source .venv/bin/activate && which python", READ),
    # Write: file creation and mutation.
    ("sed -i 's/a/b/' six.py", WRITE),
    ("sed -i.bak -e 's/x/y/' f.txt", WRITE),
    ("sed -Ei 's/(a)/\\1b/' f.txt", WRITE),
    ("perl -pi -e 's/foo/bar/' x.py", WRITE),
    ("patch -p1 < fix.diff", WRITE),
    ("git apply fix.patch", WRITE),
    ("git checkout -- six.py", WRITE),
    ("git reset --hard HEAD", WRITE),
    ("git restore six.py", WRITE),
    ("git clean -fdx", WRITE),
    ("git stash", WRITE),
    ("git add -A", WRITE),
    ("mkdir -p build", WRITE),
    ("mv a.py b.py", WRITE),
    ("cp template.cfg setup.cfg", WRITE),
    ("rm -rf build", WRITE),
    ("chmod +x run.sh", WRITE),
    ("touch newfile.py", WRITE),
    ("ln -s a b", WRITE),
    ("echo hello > notes.txt", WRITE),
    ("echo more >> notes.txt", WRITE),
    ("printf 'x\\n' > f", WRITE),
    ("git diff > my.patch", WRITE),
    ("cat > module.py <<'EOF'\ndef f():\n    return 1\nEOF", WRITE),
    ("cat <<EOF > module.py\nx = 1\nEOF", WRITE),
    ("cat >> tests/test_x.py << 'EOF'\ndef test_y():\n    assert True\nEOF", WRITE),
    ("tee config.ini <<'EOF'\n[a]\nEOF", WRITE),
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", WRITE),
    ("python -c \"open('a.txt', 'w').write('x')\"", WRITE),
    ("python3 -c \"import os; os.remove('x.py')\"", WRITE),
    ("python3 -c \"import os; os.rename('a', 'b')\"", WRITE),
    ("python3 -c \"import shutil; shutil.rmtree('build')\"", WRITE),
    ("python3 -c \"from pathlib import Path; Path('f').write_text('x')\"", WRITE),
    ("python3 -c \"with open('f', mode='a') as h: h.write('x')\"", WRITE),
    ("python3 - <<'EOF'\nfrom pathlib import Path\nPath('t.py').write_text('x')\nEOF", WRITE),
    ("python3 <<'EOF'\nf = open('out.txt', 'wb')\nEOF", WRITE),
    ("find . -name '*.pyc' -delete", WRITE),
    ("find . -name '*.orig' -exec rm {} \\;", WRITE),
    ("tar -xzf repo.tar.gz", WRITE),
    ("unzip -q data.zip", WRITE),
    ("bash -c 'echo x > y'", WRITE),
    # Test: runners and inline verification, unless combined with a mutation.
    ("pytest", TEST),
    ("pytest -x -q tests/test_six.py 2>&1 | tail -5", TEST),
    ("python -m pytest -q tests", TEST),
    (".venv/bin/python -m pytest -q toolz 2>&1 | tail -3", TEST),
    ("python3 -m unittest -q tests.test_recipes", TEST),
    ("tox -e py311", TEST),
    ("nosetests", TEST),
    ("cargo test --release", TEST),
    ("go test ./...", TEST),
    ("npm test", TEST),
    ("npm run test -- --watch=false", TEST),
    ("npx jest src", TEST),
    ("vitest run", TEST),
    ("ctest --output-on-failure", TEST),
    ("make test", TEST),
    ("cd build && make check", TEST),
    ("timeout 120 pytest tests/", TEST),
    ("PYTHONPATH=src pytest", TEST),
    ("uv run pytest", TEST),
    ('python3 -c "import six; print(six.PY3)"', TEST),
    ("python3 -c \"print(open('a.txt').read())\"", TEST),
    ("python3 - <<'EOF'\nimport toolz\nassert toolz.identity(1) == 1\nEOF", TEST),
    ("node -e 'console.log(1)'", TEST),
    ("pip install -e . && pytest", TEST),
    ("python setup.py test", TEST),
    ("bash run_tests.sh", TEST),
    # A test runner capturing its own output (a redirect, tee) is still a test run.
    ("pytest > log.txt", TEST),
    ("pytest -q tests > log.txt 2>&1", TEST),
    ("pytest tests | tee out.log", TEST),
    ("python -m pytest 2>&1 | tee out.txt", TEST),
    ("make test > build.log", TEST),
    ("python tests/test_parser.py > log", TEST),
    # A python script is classed by what it is: a test file is a test runner; any other script
    # file is not inline verification (its code is not on the line) and falls back to Read.
    ("python test_six.py", TEST),
    ("python3 examples/c-to-c.py examples/c_files/basic.c | head -20", READ),
    ("python reproduce.py", READ),
    ("python scripts/gen.py", READ),
    ("node scripts/build.js", READ),
    # A test runner stays Test whatever else the line does: the spec's "not combined with
    # file-mutation operators" qualifies inline verification only.
    ("sed -i 's/a/b/' x.py && pytest", TEST),
    ("pytest -q && sed -i s/a/b/ f.py", TEST),
    ("pytest > log.txt && sed -i 's/a/b/' x.py", TEST),
    ("cp a.py b.py; pytest | tee out.log", TEST),
    ("rm -rf .pytest_cache && python -m pytest", TEST),
    ("cat > t.py <<'EOF'\nx = 1\nEOF\npython -m pytest t.py", TEST),
    # Inline verification combined with any file write, a redirect included, is not Test.
    ('python3 -c "print(1)" > out.txt', WRITE),
    ("python reproduce.py > out.txt", WRITE),
    ("node -e 'console.log(1)' > out.txt", WRITE),
    ("echo x | tee out.txt", WRITE),
    ('python3 -c "import six" && sed -i s/a/b/ f.py', WRITE),
    # Install: package managers.
    ("pip install -e .", INSTALL),
    ("pip3 install --no-index --find-links wheels requests", INSTALL),
    ("python -m pip install --no-deps -e .", INSTALL),
    (".venv/bin/pip list 2>/dev/null | grep toolz", INSTALL),
    ("python3 -m venv .venv", INSTALL),
    ("uv pip install ruff", INSTALL),
    ("uv sync", INSTALL),
    ("poetry install", INSTALL),
    ("conda install numpy -y", INSTALL),
    ("npm install", INSTALL),
    ("npm ci", INSTALL),
    ("yarn add lodash", INSTALL),
    ("pnpm install", INSTALL),
    ("cargo install ripgrep", INSTALL),
    ("apt-get install -y libssl-dev", INSTALL),
    ("apk add gcc", INSTALL),
    ("go get example.com/mod", INSTALL),
    ("python setup.py develop", INSTALL),
    ("make install", INSTALL),
    ("pip install -r requirements.txt > /dev/null", INSTALL),
    # Build: compilers, build tools, linters, git commit/merge/rebase/cherry-pick.
    ("gcc -O2 -c lz4.c -o lz4.o", BUILD),
    ("g++ -std=c++17 main.cpp -o main", BUILD),
    ("clang -Wall x.c", BUILD),
    ("make -j2 2>&1 | tail -3", BUILD),
    ("make -f Makefile.c clean", BUILD),
    ("cmake -S . -B build", BUILD),
    ("cmake --build build", BUILD),
    ("ninja -C build", BUILD),
    ("cargo build", BUILD),
    ("go build ./...", BUILD),
    ("tsc -p .", BUILD),
    ("npm run build", BUILD),
    ("ruff check .", BUILD),
    ("ruff format src", BUILD),
    ("flake8 six.py", BUILD),
    ("black --check .", BUILD),
    ("isort .", BUILD),
    ("mypy src", BUILD),
    ("pylint pkg", BUILD),
    ("eslint src", BUILD),
    ("python -m mypy six.py", BUILD),
    ("python3 -m pyflakes six.py 2>&1 | head -5 || true", BUILD),
    ("python setup.py build_ext --inplace", BUILD),
    ("python -m build --wheel", BUILD),
    ("git commit -qm 'fix'", BUILD),
    ("git add x && git commit -m x", BUILD),
    ("git merge feature", BUILD),
    ("git rebase main", BUILD),
    ("git cherry-pick abc123", BUILD),
    ("./configure --prefix=/usr", BUILD),
    ("ar rcs lib.a a.o b.o", BUILD),
    ("mkdir -p build && gcc x.c -o build/x", BUILD),
    # Shell reserved words are not programs: the command after them decides.
    ('for f in src/*.c; do gcc -c "$f" -o "build/$(basename "$f" .c).o" || exit 1; done', BUILD),
    ("if grep -q old f.py; then sed -i 's/old/new/' f.py; fi", WRITE),
    ('while read -r f; do wc -l "$f"; done < files.txt', READ),
    ("for n in 1 2 3; do python3 -m pytest -q -x tests; done", TEST),
    ("! grep -q TODO six.py", READ),
]


def test_it_has_at_least_a_hundred_labelled_commands_covering_every_stage():
    assert len(LABELLED) >= 100
    assert {stage for _, stage in LABELLED} == {READ, WRITE, INSTALL, BUILD, TEST}


@pytest.mark.parametrize("command,stage", LABELLED)
def test_it_assigns_each_labelled_command_its_stage(command, stage):
    assert classify(command) == stage


def test_it_survives_unbalanced_quotes():
    assert classify('grep -n "unterminated six.py') == READ
    assert classify("sed -i 's/a/b six.py") == WRITE


def test_it_prints_one_stage_per_stdin_line_in_order(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("ls\npytest -q\nsed -i s/a/b/ f\npip install x\n"))
    out = io.StringIO()
    call_command("bench", "classify", stdout=out)
    assert out.getvalue().splitlines() == [READ, TEST, WRITE, INSTALL]


def test_it_reads_a_json_array_for_commands_that_span_lines(monkeypatch):
    commands = ["cat > f.py <<'EOF'\nx = 1\nEOF", "gcc -c a.c", "git diff"]
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(commands)))
    out = io.StringIO()
    call_command("bench", "classify", "--json", stdout=out)
    assert out.getvalue().splitlines() == [WRITE, BUILD, READ]


def test_it_refuses_json_that_is_not_an_array_of_strings(monkeypatch):
    from django.core.management.base import CommandError

    monkeypatch.setattr("sys.stdin", io.StringIO('{"command": "ls"}'))
    with pytest.raises(CommandError, match="JSON array of command strings"):
        call_command("bench", "classify", "--json", stdout=io.StringIO())
