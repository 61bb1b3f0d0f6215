"""gunicorn's settings for the dashboard `./boxbench.sh run` serves (`gunicorn -c` this file).

Two workers of four threads each suit the two-core machine the default run targets: pages are
read from materialized aggregates, so a request mostly waits on the database or the page cache.
Static files are served by whitenoise inside the application (boxbench/settings.py), from what
`manage.py collectstatic` gathered. A command-line option overrides any setting here (the tests
bind a free port with `-b`).
"""

import os
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
