"""The loopback fakes' shared backend: work it does after answering ends when it closes."""

import pytest

from runner.providers.fakes.backend import Backend, Busy, CreateWindow, declared_limits


def test_closing_waits_for_background_work_and_wakes_a_sleeping_create(tmp_path):
    backend = Backend(tmp_path)
    woke: list[bool] = []

    def provision():
        woke.append(backend.sleep_unless_closed(600))

    backend.in_background(provision)
    backend.close()
    # A create still asleep when its test ended used to make its sandbox later, in a directory
    # that test had removed, and fail whichever test was running then.
    assert woke == [False]


def test_a_create_window_admits_its_count_then_refuses_with_when_to_retry(tmp_path):
    now = [100.0]
    backend = Backend(tmp_path, max_concurrent=None, create_window=CreateWindow(5, 1.0))
    backend.clock = lambda: now[0]
    try:
        for _ in range(5):
            backend.admit()
        with pytest.raises(Busy) as refused:
            backend.admit()
        assert (refused.value.kind, refused.value.limit) == ("rate", 5)
        assert str(refused.value) == "Sandbox creation rate limit (5/s) exceeded"
        assert refused.value.retry_after_s == 1
        now[0] += 0.91  # 0.1 s early, half the 0.2 s spacing of 5/s, is jitter: admitted
        backend.admit()
    finally:
        backend.close()


def test_a_rate_under_one_a_second_is_one_create_per_interval(tmp_path):
    assert CreateWindow.per_second(0.5) == CreateWindow(1, 2.0)
    assert CreateWindow.per_second(10) == CreateWindow(10, 1.0)
    now = [0.0]
    backend = Backend(tmp_path, create_rate_per_s=0.5)
    backend.clock = lambda: now[0]
    try:
        backend.admit()
        now[0] = 0.9
        with pytest.raises(Busy) as refused:
            backend.admit()
        assert refused.value.retry_after_s == 2 and "(1 per 2 s)" in str(refused.value)
        now[0] = 1.5  # half a second early against the 2 s window: jitter, admitted
        backend.admit()
    finally:
        backend.close()


def test_the_concurrency_cap_counts_boxes_still_being_created(tmp_path):
    backend = Backend(tmp_path, max_concurrent=1)
    try:
        backend.admit()
        backend.reserve(60)  # created, not yet started: it holds its place
        with pytest.raises(Busy) as refused:
            backend.admit()
        assert (refused.value.kind, refused.value.limit) == ("concurrency", 1)
    finally:
        backend.close()


def test_a_fakes_documented_limits_are_its_providers_declared_ones():
    from runner.providers.fakes.e2b import E2BFake

    assert declared_limits("e2b") == {"max_concurrent": 20, "create_rate_per_s": 1.0}
    assert E2BFake.documented_limits() == declared_limits("e2b")
