"""What reaches a terminal from hostile names, and a trace slug that would leave its folder."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench.cli.terminal import printable
from tests.boxbench.rawdata_files import reseal, valid_lines, with_field, write

ESC_TITLE = "\x1b]0;owned\x07"
RIGHT_TO_LEFT = "\u202e"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain name", "plain name"),
        (f"run{ESC_TITLE}", "run\\x1b]0;owned\\x07"),
        (f"cause {RIGHT_TO_LEFT}gnp.exe", "cause \\u202egnp.exe"),
        ("isolate \u2066x\u2069 zero\u200bwidth", "isolate \\u2066x\\u2069 zero\\u200bwidth"),
        ("c1 \x9b31m and del \x7f", "c1 \\x9b31m and del \\x7f"),
        ("line\u2028separator", "line\\u2028separator"),
        ("two\nlines\tand a tab, café, 漢字", "two\nlines\tand a tab, café, 漢字"),
    ],
)
def test_printable_escapes_control_and_bidirectional_characters(text, shown):
    assert printable(text) == shown


@pytest.mark.django_db
def test_an_imported_run_name_with_terminal_escapes_is_refused_naming_the_field(tmp_path):
    name = f"evil{ESC_TITLE}{RIGHT_TO_LEFT}name"
    path = write(tmp_path / "run.jsonl", reseal(with_field(valid_lines(), 0, "run.name", name)))
    with pytest.raises(CommandError, match=r"field 'run.name': contains U\+001B") as refused:
        call_command("bench", "import", str(path))
    assert "\x1b" not in str(refused.value) and RIGHT_TO_LEFT not in str(refused.value)


@pytest.mark.django_db
def test_an_error_naming_a_hostile_value_reaches_the_terminal_escaped(tmp_path):
    missing = tmp_path / f"missing{ESC_TITLE}{RIGHT_TO_LEFT}.jsonl"
    with pytest.raises(CommandError, match="cannot be read") as refused:
        call_command("bench", "import", str(missing))
    assert "\x1b" not in str(refused.value) and RIGHT_TO_LEFT not in str(refused.value)
    assert "missing\\x1b]0;owned\\x07\\u202e.jsonl" in str(refused.value)


@pytest.mark.parametrize("slug", ["../x", "a/../../b", "x/y", "..", "ok\n", "Upper-case"])
def test_trace_record_refuses_a_slug_that_is_not_a_folder_name_before_writing(tmp_path, slug):
    session = tmp_path / "session.txt"
    session.write_text("true\n")
    archive = tmp_path / "repo.tar.gz"
    archive.write_bytes(b"not read: refused before")
    out_root = tmp_path / "traces" / "inner"
    out_root.mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(CommandError, match="--slug must be 3 to 80 lowercase letters"):
        call_command(
            "bench",
            "trace",
            "record",
            str(session),
            "--archive",
            str(archive),
            "--slug",
            slug,
            "--title",
            "t",
            "--stratum",
            "edit-loop",
            "--source",
            "https://example.org/r.tgz",
            "--on",
            "host",
            "--unsafe-on-host",
            "--out",
            str(out_root),
            "--force",
        )
    assert sorted(p for p in tmp_path.rglob("*")) == before
