"""The overview's weight on the wire with a cold cache, now beside an earlier revision's.

    .venv/bin/python bench/bench_weight.py [--before REV] [--trials 600] [--port 18xxx]

For this checkout and for the revision --before (by default the one before the partial plotly.js
bundles came in), in a fresh SQLite database under a temporary directory: imports a synthetic
run (bench/synthetic.py) through `bench import`, publishes it, collects the static files, starts
gunicorn as `boxbench.sh run` does and fetches the overview as Chromium with an empty cache does:
the page, then every stylesheet and script it links, asking for `gzip, deflate, br`. Prints each
file's bytes on the wire (body as sent, and headers) and the total, for both checkouts.
The earlier revision comes out of git (`git archive`), so the figure beside ours is measured in
the same run on the same machine.
"""

import argparse
import os
import random
import re
import secrets
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
LINKED = re.compile(r'<(?:script|link)[^>]*?(?:src|href)="(/static/[^"]+)"')
FIRST_PARTIAL = "static/vendor/plotly-basic.min.js"

PUBLISH = r"""
import sys, django
django.setup()
from django.utils import timezone
from bench import synthetic
from boxbench.leaderboard.materialize import materialize
from boxbench.models import Run
from boxbench.rawdata import import_jsonl
path = sys.argv[1]
with open(path, "w", encoding="utf-8") as handle:
    handle.writelines(synthetic.synthetic_run(trials=int(sys.argv[2]), name="weight"))
run = import_jsonl(path).run
Run.objects.filter(id=run.id).update(published=True, published_at=timezone.now())
materialize()
"""


def before_partial_bundles() -> str:
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", FIRST_PARTIAL],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not added:
        raise SystemExit(f"no commit adds {FIRST_PARTIAL}: give --before")
    return added[-1] + "^"


def export(rev: str, target: Path) -> Path:
    """The revision's tree, without its git history."""
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def serve(tree: Path, var: Path, trials: int, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "BOXBENCH_VAR_DIR": str(var),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(48),
        "DJANGO_SETTINGS_MODULE": "boxbench.settings",
    }
    for name in ("DATABASE_URL", "BOXBENCH_CACHE_URL", "BOXBENCH_REDIS_URL", "STATIC_ROOT"):
        env.pop(name, None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=tree, env=env, check=True)
    run = [sys.executable, "-c", PUBLISH, str(var / "run.jsonl"), str(trials)]
    subprocess.run(run, cwd=tree, env=env, check=True, capture_output=True)
    subprocess.run([*manage, "collectstatic", "--noinput", "-v0"], cwd=tree, env=env, check=True)
    log = open(var / "gunicorn.log", "wb")  # noqa: SIM115  the server's, closed with it
    command = [sys.executable, "-m", "gunicorn", "boxbench.wsgi", "-b", f"127.0.0.1:{port}"]
    server = subprocess.Popen(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit((var / "gunicorn.log").read_text()) from None
            time.sleep(0.2)


def fetch(client: httpx.Client, path: str) -> tuple[int, int, str, str]:
    """Bytes of the body as sent, bytes of the status line and headers, the body, its encoding."""
    response = client.get(path, headers={"Accept-Encoding": "gzip, deflate, br"})
    response.raise_for_status()
    head = len(f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n") + sum(
        len(k) + len(v) + 4 for k, v in response.headers.raw
    )
    encoding = response.headers.get("content-encoding", "identity")
    return response.num_bytes_downloaded, head, response.text, encoding


def weigh(label: str, tree: Path, trials: int, port: int) -> int:
    with tempfile.TemporaryDirectory(prefix="boxbench-weight-") as var:
        server = serve(tree, Path(var), trials, port)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                body, head, page, _ = fetch(client, "/")
                rows = [("/ (the page)", body, head, "identity")]
                for link in LINKED.findall(page):
                    body, head, _, encoding = fetch(client, link)
                    rows.append((link, body, head, encoding))
        finally:
            server.terminate()
            server.wait(timeout=30)
    total = sum(body + head for _, body, head, _ in rows)
    print(f"\n{label}")
    for path, body, head, encoding in rows:
        print(f"  {body:>10,} B body + {head:>4} B headers  {encoding:<8} {path}")
    print(f"  {total:>10,} B on the wire for the overview, cold cache ({total / 1024:,.0f} KiB)")
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="", help="The earlier revision (git).")
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--port", type=int, default=random.randint(18000, 18999))
    args = parser.parse_args()
    before = args.before or before_partial_bundles()
    with tempfile.TemporaryDirectory(prefix="boxbench-before-") as tmp:
        tree = export(before, Path(tmp))
        earlier = weigh(f"before: revision {before}", tree, args.trials, args.port)
    now = weigh("now: this checkout", ROOT, args.trials, args.port)
    print(f"\nnow / before: {now / earlier:.3f} ({earlier / now:.1f} times lighter)")


if __name__ == "__main__":
    main()
