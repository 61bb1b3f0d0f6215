"""gunicorn's settings for the dashboard `./boxbench.sh run` serves (`gunicorn -c` this file).

Two workers of four threads each suit the two-core machine the default run targets: pages are
read from materialized aggregates, so a request mostly waits on the database or the page cache.
Static files are served by whitenoise inside the application (boxbench/settings.py), from what
`manage.py collectstatic` gathered. A command-line option overrides any setting here (the tests
bind a free port with `-b`).
"""

import os
import pwd
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_VAR = Path(os.environ.get("BOXBENCH_VAR_DIR") or _ROOT / "var")

wsgi_app = "boxbench.wsgi:application"
bind = ["127.0.0.1:8000"]
workers = 2
threads = 4
# Loading the application before forking: a bad setting (an unsafe SECRET_KEY) stops start-up
# once, with its message, instead of every worker failing in turn.
preload_app = True
# `./boxbench.sh stop` sends TERM and kills what is left after three seconds.
graceful_timeout = 3
accesslog = str(_VAR / "dashboard-access.log")

# Started as root (as `./boxbench.sh run` is), the workers that answer requests run as an
# unprivileged user of their own: a flaw in a page then reaches neither root's files nor the
# sandboxes and the engine's socket. The master keeps root to load the settings (the secret key
# file is readable by root only) and its logs; `./boxbench.sh web-user` creates the user and
# gives it what the workers write (the SQLite database and the raw-data exports).
WEB_USER = os.environ.get("BOXBENCH_WEB_USER") or "boxbench-web"
# Only where the web user cannot run this Python (one installed under /root): boxbench.sh says
# why, and sets this, rather than not serving at all.
AS_ROOT = os.environ.get("BOXBENCH_WEB_AS_ROOT") == "1"
if os.geteuid() == 0 and not AS_ROOT:
    try:
        _web = pwd.getpwnam(WEB_USER)
    except KeyError:
        raise SystemExit(
            f"gunicorn was started as root, and its workers run as {WEB_USER!r}, which does not "
            "exist: create it with `./boxbench.sh web-user` (run does), or name another "
            "unprivileged user in BOXBENCH_WEB_USER"
        ) from None
    if _web.pw_uid == 0:
        raise SystemExit(f"BOXBENCH_WEB_USER={WEB_USER!r} is root: name an unprivileged user")
    user, group = _web.pw_uid, _web.pw_gid
