"""System checks for misconfiguration that settings parsing alone cannot see."""

import shutil

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.core.exceptions import ImproperlyConfigured


@register()
def check_queue(app_configs, **kwargs):
    return queue_problems(settings.Q_CLUSTER, settings.DATABASES["default"]["ENGINE"])


def queue_problems(q: dict, database_engine: str) -> list:
    errors = []
    if q.get("timeout", 0) >= q.get("retry", 0):
        errors.append(
            Error(
                "Q_CLUSTER timeout must be below retry, or a long trial is handed out twice.",
                hint="Lower BOXBENCH_Q_TIMEOUT.",
                id="boxbench.E001",
            )
        )
    if q.get("max_attempts") != 1:
        errors.append(
            Error(
                "Q_CLUSTER max_attempts must be 1: the runner owns top-ups, never the queue.",
                id="boxbench.E002",
            )
        )
    if "redis" in q and database_engine.endswith("sqlite3"):
        errors.append(
            Warning(
                "A Redis broker serves several job hosts, which must share one PostgreSQL "
                "database; SQLite is local to one machine.",
                hint="Set DATABASE_URL to a postgres:// URL.",
                id="boxbench.W001",
            )
        )
    return errors


DEVELOPMENT_KEY_MARK = "development-only"
SECRET_KEY_MIN_LENGTH = 50


def secret_key_problem(key: str) -> str | None:
    """Why a SECRET_KEY must not sign a served site's sessions and CSRF tokens, or None."""
    if DEVELOPMENT_KEY_MARK in key:
        return "SECRET_KEY is the development default"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"SECRET_KEY has {len(key)} characters, fewer than {SECRET_KEY_MIN_LENGTH}"
    return None


def refuse_unsafe_secret_key() -> None:
    """Serving or running queued tasks with DEBUG off: stop start-up (runserver and gunicorn
    load boxbench/wsgi.py; manage.py calls it before `qcluster`)."""
    problem = None if settings.DEBUG else secret_key_problem(settings.SECRET_KEY)
    if problem:
        raise ImproperlyConfigured(
            f"{problem}: set SECRET_KEY or SECRET_KEY_FILE to a random value of at least "
            f"{SECRET_KEY_MIN_LENGTH} characters (or DEBUG=1 for development)"
        )


@register(deploy=True)
def check_deploy_secret(app_configs, **kwargs):
    problem = secret_key_problem(settings.SECRET_KEY)
    if problem:
        return [
            Error(
                f"{problem}.",
                hint=f"Set SECRET_KEY or SECRET_KEY_FILE to a random value of at least "
                f"{SECRET_KEY_MIN_LENGTH} characters.",
                id="boxbench.E003",
            )
        ]
    return []


@register()
def check_bubblewrap(app_configs, **kwargs):
    if shutil.which("bwrap") is None:
        return [
            Warning(
                "bubblewrap (bwrap) is not installed: the local provider cannot run.",
                hint="apt-get install bubblewrap",
                id="boxbench.W002",
            )
        ]
    return []
