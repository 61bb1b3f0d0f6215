"""Login throttling for the admin: after MAX_FAILURES failed logins from one client address within
WINDOW_S, further attempts from it are refused without checking the password until the window
has passed, so a password cannot be guessed at the speed of the server.

Failures are counted in the shared cache (every web process sees them) when Django reports one
(the `user_login_failed` signal); a success does not reset the count, so interleaving a known
account's login does not buy more guesses. A failing cache counts nothing: the admin then works
unthrottled rather than not at all (boxbench/cache_guard.py).
"""

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import ValidationError

MAX_FAILURES = 10
WINDOW_S = 15 * 60


def _key(request) -> str:
    return f"login-failures:{request.META.get('REMOTE_ADDR', '')}"


def failures(request) -> int:
    return cache.get(_key(request), 0)


def record_failure(sender, credentials, request=None, **kwargs) -> None:
    if request is None:
        return
    key = _key(request)
    # add() starts the window once; later failures count within it without extending it.
    if not cache.add(key, 1, WINDOW_S):
        try:
            cache.incr(key)
        except ValueError:  # the entry expired between add and incr: a new window
            cache.add(key, 1, WINDOW_S)
        except Exception:  # noqa: BLE001 - a failing cache counts nothing, never a 500
            pass


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's login form, refusing a throttled address before the password is checked."""

    def clean(self):
        if self.request is not None and failures(self.request) >= MAX_FAILURES:
            raise ValidationError(
                f"Too many failed logins from this address: try again in {WINDOW_S // 60} minutes.",
                code="throttled",
            )
        return super().clean()


def connect() -> None:
    user_login_failed.connect(record_failure, dispatch_uid="boxbench-login-throttle")
