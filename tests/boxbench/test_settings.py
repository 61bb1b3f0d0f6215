import pytest
from django.core.exceptions import ImproperlyConfigured

from boxbench.env import envbool, envint, envlist, envsecret


def test_it_reads_booleans_strictly(monkeypatch):
    monkeypatch.setenv("FLAG", "yes")
    assert envbool("FLAG", False) is True
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe' is not a boolean"):
        envbool("FLAG", False)


def test_it_names_the_variable_of_a_bad_number(monkeypatch):
    monkeypatch.setenv("WORKERS", "two")
    with pytest.raises(ImproperlyConfigured, match="WORKERS='two' is not a whole number"):
        envint("WORKERS", 1)
    monkeypatch.setenv("WORKERS", "0")
    with pytest.raises(ImproperlyConfigured, match="WORKERS=0 is below its minimum 1"):
        envint("WORKERS", 1, minimum=1)


def test_it_uses_the_default_for_an_unset_variable(monkeypatch):
    monkeypatch.delenv("HOSTS", raising=False)
    assert envlist("HOSTS", ["a"]) == ["a"]
    monkeypatch.setenv("HOSTS", "x, y,")
    assert envlist("HOSTS", ["a"]) == ["x", "y"]


def test_it_reads_a_secret_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("API_KEY_FILE", str(secret))
    assert envsecret("API_KEY") == "s3cret"
    monkeypatch.setenv("API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="API_KEY_FILE="):
        envsecret("API_KEY")


def test_it_stops_start_up_on_a_bad_setting():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={"PATH": "/usr/bin:/bin", "BOXBENCH_Q_WORKERS": "many", "HOME": "/tmp"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "BOXBENCH_Q_WORKERS='many' is not a whole number" in result.stderr


def test_it_flags_a_queue_that_would_hand_a_trial_out_twice(settings):
    from boxbench.checks import check_queue

    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 600, "retry": 600}
    assert [e.id for e in check_queue(None)] == ["boxbench.E001"]
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 60, "max_attempts": 0}
    assert [e.id for e in check_queue(None)] == ["boxbench.E002"]


def test_it_warns_that_redis_job_hosts_need_a_shared_postgres(settings):
    from boxbench.checks import queue_problems

    q = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:6379/0"}
    sqlite, postgres = "django.db.backends.sqlite3", "django.db.backends.postgresql"
    assert [e.id for e in queue_problems(q, sqlite)] == ["boxbench.W001"]
    assert queue_problems(q, postgres) == []


def test_it_accepts_the_default_queue_settings(settings):
    from boxbench.checks import check_queue

    assert check_queue(None) == []
