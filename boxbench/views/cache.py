"""Rendered pages cached per publication: aggregates change only when a run is published, so a
visitor's page is rendered once per publication and address, then served from memory.

The publication version is the id of the overview Aggregate row: materialize() replaces every
row in one transaction, so a new publication always brings a new id (one tiny query per request).
Logged-in users (staff see private parts) always get a fresh render.
"""

import functools

from django.core.cache import cache
from django.http import HttpResponse

from boxbench.models import Aggregate

TIMEOUT_S = 24 * 3600


def publication_version() -> int | None:
    return Aggregate.objects.publication_version()


def per_publication(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method != "GET" or request.user.is_authenticated:
            return view(request, *args, **kwargs)
        key = f"page:{publication_version()}:{request.get_full_path()}"
        hit = cache.get(key)
        if hit is not None:
            content, content_type, disposition = hit
            response = HttpResponse(content, content_type=content_type)
            if disposition:
                response["Content-Disposition"] = disposition
            return response
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and not response.streaming:
            entry = (
                response.content,
                response["Content-Type"],
                response.get("Content-Disposition"),
            )
            cache.set(key, entry, TIMEOUT_S)
        return response

    return wrapper
