"""boxbench settings, driven by environment variables (see .env.example)."""

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from boxbench.env import (
    envbool,
    envheader,
    envint,
    envints,
    envlist,
    envorigins,
    envsecret,
    envsite,
    envstr,
    envtoken,
    same_redis,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("BOXBENCH_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", False)
# The development key is refused with DEBUG off when the application is served (boxbench/wsgi.py)
# and by `manage.py check --deploy` (boxbench.E003); the CLI works without a key of its own.
SECRET_KEY = envsecret("SECRET_KEY", "boxbench-development-only-secret-key-change-me-in-production")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
SITE_NAME = envstr("SITE_NAME", "boxbench")
# The public address absolute links (the Atom feeds') are built from: a cached feed built from
# a request's Host would carry the first visitor's choice of it to everyone.
SITE_URL = envsite("BOXBENCH_SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_q",
    "boxbench",
]

MIDDLEWARE = [
    # Refuses odd methods and control characters before anything else runs; strips HEAD bodies.
    "boxbench.middleware.RequestHygieneMiddleware",
    "boxbench.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves static files (plotly.js, CSS) from the WSGI server itself, compressed and cached.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "boxbench.urls"
WSGI_APPLICATION = "boxbench.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = envstr("DATABASE_URL")
if _database_url:
    try:
        _db = dj_database_url.parse(_database_url, conn_max_age=envint("DB_CONN_MAX_AGE", 60))
    except Exception as exc:  # noqa: BLE001 - dj-database-url raises several types for a bad URL
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if _db.get("ENGINE") not in (
        "django.db.backends.postgresql",
        "django.db.backends.sqlite3",
    ):
        raise ImproperlyConfigured("DATABASE_URL must name a postgres:// or sqlite:/// database")
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    _db = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "boxbench.sqlite3",
        # The queue worker and the web server write at the same time: wait instead of failing.
        "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
        # Tests get a file of their own, not SQLite's shared in-memory database: threads there
        # fail at once with "table is locked" instead of waiting as the file database does.
        "TEST": {"NAME": str(Path(tempfile.gettempdir()) / f"boxbench-test-{os.getpid()}.sqlite3")},
    }
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Pages name static files by content hash, so whitenoise caches them for a year as immutable and
# sends their brotli or gzip copy; `manage.py collectstatic` makes both (boxbench.sh run does).
# With DEBUG on, pages name the files as they are and whitenoise serves them from the finders.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "boxbench.static_storage.StaticStorage"},
}
# Only the hashed names are served: half the files to compress, and no stale copy under an old name.
WHITENOISE_KEEP_ONLY_HASHED_FILES = True

LOGIN_URL = "admin:login"

# Behind TLS (docs/deployment.md). All off by default, so a local dashboard works over plain HTTP.
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
# Trust the proxy's header only when a proxy sets it (and strips it from clients' requests).
SECURE_PROXY_SSL_HEADER = envheader("SECURE_PROXY_SSL_HEADER")
CSRF_TRUSTED_ORIGINS = envorigins("CSRF_TRUSTED_ORIGINS")
# Scripts only from our own static files (plotly is served locally); chart data travels in
# json_script elements, which are data, never executed. Styles allow inline: plotly draws by
# setting style attributes and injects its own stylesheet.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

# The queue. One task is one step of a provider's chain (runner/steps.py): its start, or one
# (benchmark, round) batch with its parallel trials. BOXBENCH_Q_TIMEOUT bounds that step, not a
# chain: a batch of the longest benchmark must fit in it (DeepSWE: 10 parallel trials, each under
# its 30 min limit). django-q2 hands a task out again once `retry` seconds pass, so `retry` stays
# above `timeout`; a lost step is resumed well before that by recovery (stale heartbeat, about a
# minute), and a redelivered one runs nothing (its claim on the step fails). `max_attempts` is
# 1: the runner owns top-ups, never the queue.
REDIS_URL = envsecret("BOXBENCH_REDIS_URL")  # or _FILE: the URL may hold a password
Q_TIMEOUT = envint("BOXBENCH_Q_TIMEOUT", 3600, minimum=60)
Q_CLUSTER = {
    # One name for the whole site: it salts every task's signature, so a task one job host
    # enqueues for another can be read there. Each job host's cluster serves its own queue,
    # named for the host (runner/steps.py routes a provider's steps to its host's queue).
    "name": "boxbench",
    "cluster_name": envstr("BOXBENCH_JOB_HOST", "boxbench"),
    "workers": envint("BOXBENCH_Q_WORKERS", 2, minimum=1, maximum=64),
    "timeout": Q_TIMEOUT,
    "retry": Q_TIMEOUT + 600,
    "max_attempts": 1,
    "ack_failures": True,
    "catch_up": False,
    "save_limit": 1000,
    "label": "Background jobs",
    "sync": envbool("BOXBENCH_Q_SYNC", False),
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# Rendered pages, sessions and the publication version, shared by every web process
# (boxbench/views/cache.py): a Redis of their own when BOXBENCH_CACHE_URL is set, otherwise a
# table in the database (created by migration 0008, like `createcachetable`). Never the queue's
# Redis: an anonymous loop that fills the page cache must not fill the broker's memory, and the
# cache's Redis evicts (maxmemory-policy allkeys-lru, docs/deployment.md), which would drop
# queued tasks. A failing Redis is a miss, never an error (boxbench/cache_guard.py); the socket
# timeouts bound what one call waits for a Redis that stopped answering.
CACHE_TABLE = "boxbench_cache"
CACHE_URL = envsecret("BOXBENCH_CACHE_URL")  # or _FILE: the URL may hold a password
if CACHE_URL and REDIS_URL and same_redis(CACHE_URL, REDIS_URL):
    raise ImproperlyConfigured(
        "BOXBENCH_CACHE_URL names the queue's Redis database (BOXBENCH_REDIS_URL): give the page "
        "cache a Redis of its own, with a memory cap and an eviction policy (docs/deployment.md)"
    )
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "boxbench.cache_guard.GuardedRedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "boxbench",
            "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 2.0},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": CACHE_TABLE,
            # Every page of a publication, each audience; canonical addresses only
            # (boxbench/views/canonical.py), so this bound is never reached by junk.
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }

# A published run's raw downloads (raw.jsonl, raw.csv), exported once per publication into files
# here and served from them (boxbench/views/raw_files.py); the full form holds private evidence.
RAW_EXPORT_DIR = Path(envstr("BOXBENCH_RAW_EXPORT_DIR", str(VAR_DIR / "exports")))

# Sessions are read from the shared cache and written through to the database, so a staff page
# served from the page cache needs no query for the session, and a lost cache loses no login.
# The session also remembers its page audience (boxbench/views/audience.py).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# The runner.
JOB_HOST = envstr("BOXBENCH_JOB_HOST", "") or __import__("socket").gethostname()
# What this job host is (methodology: "machines of the same type in the AWS region the
# publication names"): recorded per provider in the manifest and on every trial; results from
# job hosts of another type or region are a separate series, never combined on one board.
JOB_HOST_TYPE = envstr("BOXBENCH_JOB_HOST_TYPE", "") or (
    f"unnamed {os.uname().machine} machine, {os.cpu_count() or 1} CPUs"
)
JOB_HOST_REGION = envstr("BOXBENCH_JOB_HOST_REGION", "") or "unnamed"
RUNNER_CONCURRENCY = envint("BOXBENCH_CONCURRENCY", 2, minimum=1, maximum=256)
# The job host's cores: providers whose sandboxes run on the job host (local, docker) get parallel
# trials capped so their sandboxes' CPUs fit them (runner/plan.py, "schedule" in the manifest).
RUNNER_JOB_HOST_CPUS = envint("BOXBENCH_JOB_HOST_CPUS", os.cpu_count() or 1, minimum=1)
# Held-back pairs `bench rerun --held-back` (and `./boxbench.sh run`) re-runs, once each, per run.
RERUN_MAX_PAIRS = envint("BOXBENCH_RERUN_MAX_PAIRS", 4, minimum=0)
# The Burst benchmark's tiers (its units: creates sent at once) and the largest tier a unit may
# name; a tier above the account's declared concurrent sandboxes is not run (Account Limit).
BURST_MAX_TIER = envint("BOXBENCH_BURST_MAX_TIER", 256, minimum=1, maximum=1000)
BURST_TIERS = envints("BOXBENCH_BURST_TIERS", [1, 8, 32, 100], maximum=BURST_MAX_TIER)
# Density creates idle sandboxes until the provider refuses or this many are up.
DENSITY_CAP = envint("BOXBENCH_DENSITY_CAP", 32, minimum=1, maximum=1000)
# File Upload's and File Download's large unit, in MiB (runner/benchmarks/file_transfer.py),
# above their 8 MiB unit.
TRANSFER_LARGE_MIB = envint("BOXBENCH_TRANSFER_LARGE_MIB", 100, minimum=9, maximum=1024)
# Output Stream's size in MiB (runner/benchmarks/output_stream.py); tests use a few.
OUTPUT_STREAM_MIB = envint("BOXBENCH_OUTPUT_STREAM_MIB", 1024, minimum=1, maximum=16384)
RUNNER_JOB_HOST_CAP = envint("BOXBENCH_JOB_HOST_CAP", 16, minimum=1, maximum=256)
# Liveness: a running trial's heartbeat is written every RUNNER_HEARTBEAT_S seconds; once it is
# older than RUNNER_ORPHAN_AFTER_S the trial's worker is taken as lost and recovery ends it. The
# gap covers a database outage of up to about a minute (the heartbeat resumes when it returns).
RUNNER_HEARTBEAT_S = envint("BOXBENCH_HEARTBEAT_SECONDS", 5, minimum=1, maximum=60)
RUNNER_ORPHAN_AFTER_S = envint(
    "BOXBENCH_ORPHAN_AFTER_SECONDS", 75, minimum=4 * RUNNER_HEARTBEAT_S, maximum=3600
)
# How long a trial's result write keeps retrying through a database outage before giving up.
RUNNER_DB_RETRY_S = envint("BOXBENCH_DB_RETRY_SECONDS", 90, minimum=0, maximum=3600)
# How long a chain's workers wait, probing with backoff, for a provider's backend that refused a
# create (connection refused or reset, connect timeout) before they start another trial; past
# it the chain stops, failed (runner/outage.py). Each wait adds to its batch's step, which
# BOXBENCH_Q_TIMEOUT bounds, hence the maximum.
RUNNER_BACKEND_WAIT_S = envint("BOXBENCH_BACKEND_WAIT_SECONDS", 90, minimum=0, maximum=600)
SANDBOX_LIFETIME_MINUTES = envint("BOXBENCH_SANDBOX_LIFETIME_MINUTES", 30, minimum=1)
LOCAL_SANDBOX_ROOT = Path(envstr("BOXBENCH_LOCAL_SANDBOX_ROOT", str(VAR_DIR / "sandboxes")))
# Only for a host whose kernel cannot give a `local` sandbox its cpu, memory and pids cgroups:
# without it such a create fails, naming what is missing (docs/deployment.md).
LOCAL_ALLOW_UNLIMITED = envbool("BOXBENCH_LOCAL_ALLOW_UNLIMITED", False)
DOCKER_HOST = envstr("DOCKER_HOST")
# Bearer token for /metrics ("" = logins only); too short a token could be guessed.
METRICS_TOKEN_MIN_LENGTH = 32
METRICS_TOKEN = envtoken("BOXBENCH_METRICS_TOKEN", METRICS_TOKEN_MIN_LENGTH)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}
