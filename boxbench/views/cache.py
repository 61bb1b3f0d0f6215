"""Rendered pages cached per publication, in the cache every web process shares.

Aggregates change only when a run is published, so a page is rendered once per publication,
address and audience, then served from the shared cache (settings.CACHES: a Redis of its own
when BOXBENCH_CACHE_URL is set, otherwise a table in the database): a new gunicorn worker or a
second host does not render it again. A cache that fails is a miss (boxbench/cache_guard.py).

The publication version is the id of the overview Aggregate row: materialize() replaces every
row in one transaction, so a new publication always brings a new id. Each entry holds the version
it was rendered under, and the version itself is kept in the same cache (aggregates.VERSION_KEY,
forgotten when the rows are replaced): a hit is one round trip for both, and an entry of an older
publication is rendered again and overwritten.

The audience is part of the key: what a page shows depends on the visitor only through staff
status and the permissions in audience.PAGE_PERMISSIONS, so staff pages are cached like a
visitor's, once per combination. A hit reads the audience from the session (audience.of_with,
no query about the user); a miss stores the page under the audience computed afresh
(audience.fresh), so a page is always filed under the permissions it was rendered with.

A page that also depends on a file (the methodology) names it with `also`, a function of the
request whose answer (the file's modification time) is part of the key. A view whose page also
depends on something a publication does not change (an unpublished run, the runs awaiting
publication) calls `uncached(response)`; a response that set a cookie or used a
CSRF token is never stored either, since it is one visitor's. Nor is anything shown while the
visitor has Django messages waiting (an admin action's confirmation): those pages are rendered
for that visitor alone, neither read from nor written to the shared cache.

The key holds the page's path and its known query parameters only, and a request with unknown,
repeated or empty ones is redirected first (canonical.py): what a visitor adds to an address
never adds an entry.
"""

import functools
import hashlib

from django.contrib import messages
from django.core.cache import cache
from django.http import HttpResponse

from boxbench.models import Aggregate
from boxbench.models.aggregates import VERSION_KEY, VERSION_TTL_S
from boxbench.views import audience, canonical

TIMEOUT_S = 24 * 3600


def publication_version() -> int:
    """The current publication's version (0: nothing published), read from the database when
    the cache has forgotten it."""
    version = Aggregate.objects.publication_version() or 0
    cache.add(VERSION_KEY, version, VERSION_TTL_S)
    return version


def page_key(request, reader: str, also: str = "", params: tuple[str, ...] = ()) -> str:
    """The entry of this page: its path and its known parameters (canonical.key_query), never
    the query string as sent."""
    address = request.path + "?" + canonical.key_query(request, params)
    # Hashed: an address can be longer than any cache key may be (255 characters in the table).
    return f"page:{reader}:{hashlib.sha256(address.encode()).hexdigest()}{also}"


def uncached(response):
    """Keep this response out of the page cache."""
    response.boxbench_uncached = True
    return response


def _storable(request, response) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not getattr(response, "boxbench_uncached", False)
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
    )


def _has_messages(request) -> bool:
    # len() loads the waiting messages without marking them shown, so they still render.
    return len(messages.get_messages(request)) > 0


def per_publication(view, also=None, params: tuple[str, ...] = (), client: tuple[str, ...] = ()):
    """Cache `view` per publication. `params` are the query parameters it reads, `client` those
    only the page's script reads; a request with others is redirected (canonical.py)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method in ("GET", "HEAD"):
            moved = canonical.query_redirect(request, params, client)
            if moved is not None:
                return moved
        # HEAD is answered like GET (the server sends no body): from the cache, or rendered
        # and stored, so neither method renders a page more than once per publication.
        if request.method not in ("GET", "HEAD") or _has_messages(request):
            return view(request, *args, **kwargs)
        extra = f":{also(request)}" if also else ""
        reader, found = audience.of_with(
            request, lambda reader: [VERSION_KEY, page_key(request, reader, extra, params)]
        )
        key = page_key(request, reader, extra, params)
        version = found.get(VERSION_KEY)
        if version is None:
            version = publication_version()
        hit = found.get(key)
        if hit is not None and hit[0] == version:
            _, content, content_type, disposition = hit
            response = HttpResponse(content, content_type=content_type)
            if disposition:
                response["Content-Disposition"] = disposition
            return response
        response = view(request, *args, **kwargs)
        if _storable(request, response):
            entry = (
                version,
                response.content,
                response["Content-Type"],
                response.get("Content-Disposition"),
            )
            key = page_key(request, audience.fresh(request), extra, params)
            cache.set(key, entry, TIMEOUT_S)
        return response

    return wrapper
