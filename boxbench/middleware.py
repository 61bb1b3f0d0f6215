"""Request hygiene before any view runs, and the security headers every answer carries.

- Methods: GET, HEAD and POST (the admin's forms) only; OPTIONS, TRACE and the rest answer 405
  instead of a page.
- Control characters (NUL, escape, ...) in the path or in a query parameter's name or value are
  refused with 400 naming the parameter: no page takes one, and PostgreSQL refuses NUL inside a
  string, which would otherwise end in a 500 deep inside a query.
- HEAD answers with GET's headers and no body, whichever server runs the application.
- A ValidationError escaping a view is a value from the URL that names no object (Django's
  admin "view on site" link with a malformed UUID, say): 404, not 500.
- Content-Security-Policy (settings.CONTENT_SECURITY_POLICY) on every answer that sets none.
"""

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpResponseBadRequest, HttpResponseNotAllowed, HttpResponseNotFound

ALLOWED_METHODS = ("GET", "HEAD", "POST")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_character_problem(request) -> str | None:
    """Where the request carries a control character, or None."""
    if CONTROL.search(request.path):
        return "the path holds a control character"
    for name, values in request.GET.lists():
        if CONTROL.search(name):
            return f"query parameter {name!r} has a control character in its name"
        if any(CONTROL.search(value) for value in values):
            return f"query parameter {name!r} holds a control character"
    return None


class RequestHygieneMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ALLOWED_METHODS:
            return HttpResponseNotAllowed(ALLOWED_METHODS)
        problem = control_character_problem(request)
        if problem:
            return HttpResponseBadRequest(f"{problem}\n", content_type="text/plain; charset=utf-8")
        response = self.get_response(request)
        if request.method == "HEAD":
            without_body(response)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, ValidationError):
            return HttpResponseNotFound(
                "no such object: the address holds a malformed value\n",
                content_type="text/plain; charset=utf-8",
            )
        return None


def without_body(response) -> None:
    """Drop the body, keeping GET's Content-Length when it is known. A streamed body (a raw
    download) is never started, so HEAD costs no export query."""
    if response.streaming:
        response.streaming_content = []
        return
    if not response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))
    response.content = b""


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request):
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
