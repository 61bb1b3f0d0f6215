"""The loopback fakes' shared backend: work it does after answering ends when it closes."""

from runner.providers.fakes.backend import Backend


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
