"""The 404 and 500 pages in the site's frame. A 404 says why when a view said why (its Http404
message names what is missing); the resolver's own message, a list of URL patterns, is not for
readers."""

from django.http import Http404, HttpResponseNotFound
from django.template.loader import render_to_string
from django.urls import Resolver404


def not_found(request, exception=None):
    reason = ""
    if isinstance(exception, Http404) and not isinstance(exception, Resolver404):
        message = exception.args[0] if exception.args else ""
        reason = message if isinstance(message, str) else ""
    page = render_to_string(
        "404.html", {"request_path": request.path, "reason": reason}, request=request
    )
    return HttpResponseNotFound(page)
