"""`bench export -o` writes private evidence privately: mode 0600 whatever the umask, through an
unpredictable temporary name created exclusively, so a symbolic link planted beside the target
(at the old predictable `.partial` name, or as the target itself) never redirects the write."""

import os
import stat

import pytest
from django.core.management import call_command

from boxbench.models import Run
from boxbench.rawdata import import_jsonl
from tests.boxbench.rawdata_files import valid_lines, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(tmp_path):
    import_jsonl(write(tmp_path / "in.jsonl", valid_lines()))
    return Run.objects.get()


def test_the_full_export_is_private_whatever_the_umask(tmp_path, run):
    target = tmp_path / "full.jsonl"
    old = os.umask(0o022)
    try:
        call_command("bench", "export", str(run.id), "--full", "-o", str(target))
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert '"type":"run"' in target.read_text().splitlines()[0]
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_a_planted_link_never_receives_the_export(tmp_path, run):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    target = tmp_path / "full.jsonl"
    (tmp_path / "full.jsonl.partial").symlink_to(victim)
    call_command("bench", "export", str(run.id), "--full", "-o", str(target))
    assert victim.read_text() == "untouched"
    assert '"type":"run"' in target.read_text().splitlines()[0]
    # A link planted as the target is replaced, not written through.
    target.unlink()
    target.symlink_to(victim)
    call_command("bench", "export", str(run.id), "--full", "-o", str(target))
    assert victim.read_text() == "untouched"
    assert not target.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o600
