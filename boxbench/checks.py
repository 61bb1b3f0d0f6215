"""System checks for misconfiguration that settings parsing alone cannot see."""

import shutil

from django.conf import settings
from django.core.checks import Error, Warning, register


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


@register(deploy=True)
def check_deploy_secret(app_configs, **kwargs):
    if "development-only" in settings.SECRET_KEY:
        return [
            Error(
                "SECRET_KEY is the development default.",
                hint="Set SECRET_KEY or SECRET_KEY_FILE.",
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
