"""Every sandbox a trial makes waits its turn at the provider's create rate before the adapter is
called, outside every timed span: the trial's own create, a restore, a fork and the base of
Create's layer alike (common methodology: "the benchmark script spaces create calls to that
limit outside all timed steps")."""

import time

import pytest

from runner.benchmarks import all_benchmarks
from runner.chain import CreateSpacer
from runner.lifecycle import run_trial
from runner.outcomes import EvidenceKind
from runner.providers.local import LocalProvider
from tests.support.runner import FAST


class Logged(LocalProvider):
    """`local`, logging each adapter call the lifecycle makes to get a sandbox (not the calls
    local makes of itself inside one)."""

    def __init__(self, declaration, settings, log):
        super().__init__(declaration, settings)
        self.log, self.depth = log, 0

    def _logged(self, name, call):
        if not self.depth:
            self.log.append(name)
        self.depth += 1
        try:
            return call()
        finally:
            self.depth -= 1

    def create(self, spec):
        return self._logged("create", lambda: super(Logged, self).create(spec))

    def restore(self, snapshot_id, spec):
        return self._logged("restore", lambda: super(Logged, self).restore(snapshot_id, spec))

    def fork(self, sandbox, spec):
        return self._logged("fork", lambda: super(Logged, self).fork(sandbox, spec))


@pytest.mark.parametrize(
    ("slug", "calls"),
    [
        ("snapshot-restore", ["turn", "create", "turn", "restore"]),
        ("fork", ["turn", "create", "turn", "fork"]),
    ],
)
def test_every_sandbox_of_a_trial_waits_its_turn_before_the_adapter_call(local, slug, calls):
    log: list[str] = []
    provider = Logged(local.declaration, local.settings, log)
    module = all_benchmarks()[slug]
    result = run_trial(
        provider,
        module.DEFINITION,
        module.units()[0],
        module.run,
        label="bb-spaced",
        limits=FAST,
        space=lambda: log.append("turn"),
    )
    assert (result.outcome, result.cause) == ("success", "")
    made = [e for e in result.evidence if e.kind == EvidenceKind.SANDBOX]
    assert len(made) == calls.count("turn") == 2
    assert log == calls


def test_the_chains_spacer_holds_each_create_to_the_declared_interval_and_counts_its_waits():
    # Two creates a second: each turn comes at least 0.5 s after the one before it. The bound
    # is from before the first turn, so a slow host can only make the turns later, never early.
    spacer = CreateSpacer(2.0)
    before = time.monotonic()
    turns = []
    for _ in range(3):
        spacer.wait()
        turns.append(time.monotonic())
    assert [turn - before >= 0.5 * i for i, turn in enumerate(turns)] == [True] * 3
    assert spacer.interval == 0.5 and spacer.waits == 2 and spacer.waited_s > 0.5
    unspaced = CreateSpacer(None)  # a provider that declares no rate
    unspaced.wait()
    unspaced.wait()
    assert (unspaced.interval, unspaced.waits) == (0.0, 0)
