"""Static files for the tests, collected as a deployment collects them.

Pages name static files by content hash, which only `collectstatic`'s manifest knows, so every
test that renders a page needs one. Collecting compresses plotly.js with brotli (tens of seconds
on two cores), so the result is kept per digest of what goes into it and shared by every worker
and session on the machine (several checkouts may use builds of their own at once); a lock keeps
two workers from building at once, and builds unused for a day are removed.
"""

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.test.utils import override_settings

CACHE = Path(tempfile.gettempdir()) / "boxbench-test-static"
MANIFEST = "staticfiles.json"
DAY = 24 * 3600


def digest() -> str:
    """What decides the collected files: our static sources, the storage and the packages that
    bring static files (the admin's) or compress them."""
    h = hashlib.sha256()
    sources = Path(settings.BASE_DIR) / "static"
    for path in sorted(p for p in sources.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes())
    h.update((Path(settings.BASE_DIR) / "boxbench" / "static_storage.py").read_bytes())
    for package in ("Django", "whitenoise", "Brotli"):
        try:
            h.update(f"{package} {importlib.metadata.version(package)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{package} absent".encode())
    return h.hexdigest()[:16]


def collected() -> Path:
    """A STATIC_ROOT holding collectstatic's output for the current sources."""
    root = CACHE / digest()
    if (root / MANIFEST).is_file():
        os.utime(root / MANIFEST)  # in use
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / MANIFEST).is_file():
            building = Path(tempfile.mkdtemp(prefix="building-", dir=CACHE))
            # From the newest earlier build: collectstatic keeps its hashed files, and their
            # compressed copies with them, so a changed stylesheet costs no plotly.js again.
            earlier = [p for p in CACHE.iterdir() if (p / MANIFEST).is_file() and p != building]
            if earlier:
                newest = max(earlier, key=lambda p: (p / MANIFEST).stat().st_mtime)
                shutil.copytree(newest, building, copy_function=shutil.copy2, dirs_exist_ok=True)
            with override_settings(STATIC_ROOT=building):
                call_command("collectstatic", "--noinput", verbosity=0)
            shutil.rmtree(root, ignore_errors=True)  # a build cut short
            os.replace(building, root)
            for old in earlier:
                if time.time() - (old / MANIFEST).stat().st_mtime > DAY:
                    shutil.rmtree(old, ignore_errors=True)
    return root


def copy_to(target: Path) -> None:
    """The collected files copied with their times, so that collectstatic there finds them
    fresh and compresses nothing again."""
    shutil.copytree(collected(), target, copy_function=shutil.copy2, dirs_exist_ok=True)
