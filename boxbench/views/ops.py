"""Operations endpoints: /metrics (Prometheus text, the view_metrics permission or the bearer
token; one collection shared by every process for up to two seconds, boxbench/metrics_cache.py)
and /healthz (up or down for everyone; the database's details for the same readers as
/metrics)."""

import hmac

from django.conf import settings
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

from boxbench import metrics, metrics_cache, permissions


def _token_matches(request) -> bool:
    expected = settings.METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), expected.encode())


@never_cache
def metrics_view(request):
    if _may_read_operations(request):
        return HttpResponse(metrics_cache.scrape(), content_type=metrics.CONTENT_TYPE)
    if request.user.is_authenticated:
        return HttpResponse(
            "metrics need the view_metrics permission\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    response = HttpResponse(
        "metrics need a login with the view_metrics permission, or the BOXBENCH_METRICS_TOKEN "
        "bearer token\n",
        status=401,
        content_type="text/plain; charset=utf-8",
    )
    response["WWW-Authenticate"] = 'Bearer realm="boxbench metrics"'
    return response


def _may_read_operations(request) -> bool:
    return _token_matches(request) or permissions.may(request, permissions.VIEW_METRICS)


@never_cache
def healthz(request):
    """200 when the database answers a query, else 503 (never a traceback). Only those who may
    read /metrics learn which database and why it failed: the error names its host and port."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure to reach the database is "unavailable"
        if not _may_read_operations(request):
            return JsonResponse({"status": "unavailable"}, status=503)
        return JsonResponse(
            {"status": "unavailable", "database": {"ok": False, "error": _describe(exc)}},
            status=503,
        )
    if not _may_read_operations(request):
        return JsonResponse({"status": "ok"})
    return JsonResponse({"status": "ok", "database": {"ok": True, "vendor": connection.vendor}})


def _describe(exc: Exception) -> str:
    """The error's class and first line: enough to act on, without a driver's long dump."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else 'no message'}"
