"""`bench doctor`: what each provider needs and whether it is there; the database, the queue,
the page cache, free disk.

Each line is PASS, FAIL, or SKIP for an optional provider nobody configured (nothing was checked;
the line says what would enable it). Only FAIL fails the command."""

import shutil

from django.conf import settings
from django.core.cache import caches
from django.core.management.base import CommandError
from django.db import connection

from boxbench.env import redis_place
from boxbench.provider_status import provider_checks
from runner.declarations import DeclarationError, load_all

help = "Check what each provider needs, the database, the queue, the page cache and free disk."

MIN_FREE_GIB = 2.0


def add_arguments(parser):
    parser.add_argument("--provider", action="append", help="Only these providers (repeatable).")


def handle(options, out):
    failures = 0

    def report(section, name, ok, detail, verdict=None):
        nonlocal failures
        failures += not ok
        out.write(f"{verdict or ('PASS' if ok else 'FAIL')} {section:<9} {name:<14} {detail}")

    try:
        declarations = load_all()
    except DeclarationError as exc:
        report("provider", "declarations", False, str(exc))
        declarations = {}
    for slug, declaration in declarations.items():
        if options.get("provider") and slug not in options["provider"]:
            continue
        for check in provider_checks(slug, declaration):
            report("provider", f"{slug}:{check.name}", check.ok, check.detail, check.verdict)
    for name, ok, detail in (database_check(), queue_check(), cache_check()):
        report("service", name, ok, detail)
    for path in (settings.VAR_DIR, settings.LOCAL_SANDBOX_ROOT):
        ok, detail = disk_check(path)
        report("disk", str(path.name), ok, detail)
    if failures:
        raise CommandError(f"{failures} check(s) failed")


def database_check():
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001
        return "database", False, f"{connection.vendor}: {exc}"
    return "database", True, f"{connection.vendor} {connection.settings_dict['NAME']}"


def queue_check():
    from django_q.brokers import get_broker

    q = settings.Q_CLUSTER
    kind = "redis" if "redis" in q else "orm"
    if q.get("sync"):
        return "queue", True, "sync: tasks run inline (BOXBENCH_Q_SYNC)"
    try:
        broker = get_broker()
        ok = broker.ping()
    except Exception as exc:  # noqa: BLE001
        return "queue", False, f"{kind} broker: {exc}"
    return "queue", bool(ok), f"{kind} broker, cluster {q['name']!r}; start it: manage.py qcluster"


# Policies that make room when the cache is full; the others refuse writes (pages then render
# uncached every time).
EVICTING = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu")


def cache_check():
    """Where the page cache lives, and on Redis whether it is capped and evicts."""
    if not settings.CACHE_URL:
        shared = " (the queue's Redis is not shared)" if settings.REDIS_URL else ""
        detail = f"database table {settings.CACHE_TABLE}{shared}"
        return "cache", True, f"{detail}; BOXBENCH_CACHE_URL names a Redis of its own"
    server, number = redis_place(settings.CACHE_URL)
    where = f"redis {server} db {number}"
    try:
        memory = caches["default"]._cache.get_client(write=True).info("memory")
    except Exception as exc:  # noqa: BLE001
        return "cache", False, f"{where}: {type(exc).__name__}: {exc}"
    cap, policy = int(memory.get("maxmemory", 0)), memory.get("maxmemory_policy", "unknown")
    problems = []
    if not cap:
        problems.append("no memory cap (set maxmemory)")
    if policy not in EVICTING:
        problems.append(f"maxmemory-policy {policy} refuses writes when full (use allkeys-lru)")
    if settings.REDIS_URL and redis_place(settings.REDIS_URL)[0] == server:
        problems.append("the queue's Redis server: its eviction would drop queued tasks")
    detail = f"{where}, maxmemory {cap / 2**20:.0f} MiB, {policy}"
    if problems:
        detail += "; " + "; ".join(problems) + " (docs/deployment.md)"
    return "cache", not problems, detail


def disk_check(path):
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free / 2**30
    return free >= MIN_FREE_GIB, f"{path}: {free:.1f} GiB free (needs {MIN_FREE_GIB:g})"
