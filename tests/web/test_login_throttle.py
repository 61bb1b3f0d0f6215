"""The admin's login throttles guessing: after MAX_FAILURES failed logins from one address, even
the right password is refused from it until the window has passed; another address is not."""

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from boxbench import login_throttle

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/?next=/admin/"


def attempt(client, password, address="203.0.113.7"):
    return client.post(LOGIN, {"username": "root", "password": password}, REMOTE_ADDR=address)


def test_guessing_a_password_is_stopped_after_the_allowed_failures(client):
    User.objects.create_superuser("root", password="the-right-password-123")
    for i in range(login_throttle.MAX_FAILURES):
        response = attempt(client, f"guess-{i}")
        assert response.status_code == 200 and b"Too many failed logins" not in response.content
    refused = attempt(client, "the-right-password-123")
    assert refused.status_code == 200
    assert b"Too many failed logins from this address" in refused.content
    assert "_auth_user_id" not in client.session
    # Another address still logs in.
    assert attempt(client, "the-right-password-123", address="198.51.100.2").status_code == 302
    # Once the window has passed (its entry gone), the first address may try again.
    cache.delete("login-failures:203.0.113.7")
    client.logout()
    assert attempt(client, "the-right-password-123").status_code == 302


def test_a_refused_attempt_does_not_check_the_password(client, monkeypatch):
    User.objects.create_superuser("root", password="the-right-password-123")
    for i in range(login_throttle.MAX_FAILURES):
        attempt(client, f"guess-{i}")
    checked = []
    monkeypatch.setattr("django.contrib.auth.forms.authenticate", lambda *a, **k: checked.append(k))
    attempt(client, "another-guess")
    assert checked == []
