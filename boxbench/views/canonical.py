"""Canonical addresses: a cached page is stored under the one address that names it, so what
anonymous visitors put in a query string cannot grow the page cache.

Each cached view names the query parameters it reads (urls.py), and those the page's own script
reads in the browser (`client`: kept in the address, left out of the cache key). A request with
any other parameter, a parameter given twice (the first is kept), an empty one, or one given with
the value its absence means (DEFAULTS) is redirected (302) to the address without them, before the
cache is asked. The values are then checked by the view on a miss, where
it has the page's data: a value that names nothing is a 404, one written another way than the
page's own links write it is redirected to that form (`redirect`), and neither is stored. The
cache key is built from the known parameters only (`key_query`).
"""

import re
from urllib.parse import urlencode

from django.http import Http404, HttpResponseRedirect

# A parameter given with the value its absence means is redirected to the address without it.
DEFAULTS = {"view": "time", "page": "1", "evidence": "1"}
WHOLE_NUMBER = re.compile(r"[1-9][0-9]{0,8}")


def _address(request, pairs: list[tuple[str, str]]) -> str:
    query = urlencode(pairs)
    return request.path + ("?" + query if query else "")


def query_redirect(request, known: tuple[str, ...], client: tuple[str, ...]):
    """A redirect to the address without unknown, repeated or empty parameters, or None when
    the query string has none of them."""
    kept, changed = [], False
    for name, values in request.GET.lists():
        value = values[0]
        wanted = (name in known or name in client) and value and DEFAULTS.get(name) != value
        if not wanted or len(values) > 1:
            changed = True
        if wanted:
            kept.append((name, value))
    return HttpResponseRedirect(_address(request, kept)) if changed else None


def key_query(request, known: tuple[str, ...]) -> str:
    """The part of the cache key the query string makes: the known parameters, in one order."""
    return urlencode(sorted((n, v) for n, v in request.GET.items() if n in known))


def changed_address(request, **changes: str | None) -> str:
    """This address with the parameters in `changes` set (None or "": dropped)."""
    params = dict(request.GET.items())
    for name, value in changes.items():
        if value:
            params[name] = value
        else:
            params.pop(name, None)
    return _address(request, list(params.items()))


def redirect(request, **changes: str | None):
    """A redirect to this address with the parameters in `changes` set (None or "": dropped)."""
    return HttpResponseRedirect(changed_address(request, **changes))


def whole_number(request, name: str, default: int = 1) -> int:
    """A positive whole number parameter written as the page's links write it (no sign, no
    leading zero, at most nine digits); anything else is a 404 naming it."""
    raw = request.GET.get(name)
    if raw is None:
        return default
    if not WHOLE_NUMBER.fullmatch(raw):
        raise Http404(f"{name} must be a whole number from 1, written without leading zeros")
    return int(raw)
