"""Strict parsing of settings from environment variables.

A bad value stops start-up with a message naming the variable, so a typo in a deployment never
silently falls back to a default.
"""

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean: use one of 1/0, true/false, yes/no"
    )


def envint(name: str, default: int, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below its minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above its maximum {maximum}")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envints(name: str, default: list[int], maximum: int) -> list[int]:
    """Positive whole numbers, comma-separated, each at most `maximum`; sorted, no repeats."""
    values = []
    for item in envlist(name, [str(v) for v in default]):
        if not item.isdigit() or int(item) < 1:
            raise ImproperlyConfigured(f"{name}: {item!r} is not a positive whole number")
        if int(item) > maximum:
            raise ImproperlyConfigured(f"{name}: {item} is above its maximum {maximum}")
        values.append(int(item))
    return sorted(set(values))


def envsecret(name: str, default: str = "") -> str:
    """A secret from NAME, or from the file named by NAME_FILE (for container secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from None
    return os.environ.get(name, default)


HEADER_NAME = re.compile(r"^[A-Za-z0-9-]+$")
ORIGIN = re.compile(r"^https?://(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$")


def envheader(name: str) -> tuple[str, str] | None:
    """An HTTP header and the value that marks a request as secure, written as a header line
    ("X-Forwarded-Proto: https"), in Django's META form (("HTTP_X_FORWARDED_PROTO", "https"))."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    header, sep, value = raw.partition(":")
    header, value = header.strip(), value.strip()
    if not sep or not HEADER_NAME.match(header) or not value:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a header line: write it as 'X-Forwarded-Proto: https'"
        )
    return "HTTP_" + header.upper().replace("-", "_"), value


def envorigins(name: str) -> list[str]:
    """Origins as scheme://host[:port] (a leading '*.' allows subdomains), comma separated."""
    origins = envlist(name, [])
    for origin in origins:
        if not ORIGIN.match(origin):
            raise ImproperlyConfigured(
                f"{name}: {origin!r} is not an origin: write scheme and host, "
                "e.g. https://bench.example.org"
            )
    return origins


def envsite(name: str, default: str) -> str:
    """The site's public address, scheme://host[:port] with no path: what absolute links (the
    feeds') are built from, never a request's Host header."""
    value = os.environ.get(name, "").strip() or default
    if not ORIGIN.match(value) or "*" in value:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a site address: write scheme and host, "
            "e.g. https://bench.example.org"
        )
    return value


def envtoken(name: str, min_length: int) -> str:
    """A bearer token (envsecret): empty for none, otherwise at least `min_length` characters,
    so it cannot be guessed."""
    token = envsecret(name)
    if token and len(token) < min_length:
        raise ImproperlyConfigured(
            f"{name} has {len(token)} characters, fewer than {min_length}: use a random value "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def redis_place(url: str) -> tuple[str, str]:
    """(server, database number) a Redis URL names: host and port, or a unix socket's path."""
    parts = urlsplit(url)
    query_db = parse_qs(parts.query).get("db", [""])[0]
    if parts.scheme == "unix":
        return f"unix:{parts.path}", query_db or "0"
    try:
        port = parts.port or 6379
    except ValueError:
        port = 6379
    host = (parts.hostname or "localhost").lower()
    host = "127.0.0.1" if host in ("localhost", "::1") else host
    return f"{host}:{port}", parts.path.strip("/") or query_db or "0"


def same_redis(a: str, b: str) -> bool:
    """Whether two Redis URLs name the same database of the same server."""
    return redis_place(a) == redis_place(b)
