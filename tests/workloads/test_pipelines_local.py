"""CI pipeline units replayed end to end on the real local provider, each with its verified result.

Every unit but the quickest (xxhash-ci, a few seconds) is marked `pipelines`: together they took
4 min 24 s here on 2 cores at load 17 (lz4-ci alone 1 min 43 s), so the everyday runner loop
leaves them out (`-m "not podman and not pipelines"`) and the whole suite runs them
(`pytest -q -n 0 -m pipelines tests/workloads/test_pipelines_local.py` runs just them).
"""

import json
import shutil

import pytest

from runner import lifecycle
from runner.benchmarks import ci_pipelines
from runner.benchmarks.base import UnitDefinition
from runner.limits import Limits
from runner.pipelines.format import PIPELINES_DIR, load_pipeline
from runner.readiness import ReadinessPolicy

FAST = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.1, gone_timeout_s=5)
PRICING = {"per_vcpu_second": 1e-5, "per_gib_second": 3e-6, "billing_increment_s": 1}
QUICKEST = "xxhash-ci"
SLUGS = [
    slug if slug == QUICKEST else pytest.param(slug, marks=pytest.mark.pipelines)
    for slug in (p.parent.name for p in sorted(PIPELINES_DIR.glob("*/pipeline.json")))
]


def _trial(local, slug, definition=ci_pipelines.DEFINITION):
    unit = next(u for u in ci_pipelines.units() if u.slug == slug)
    return lifecycle.run_trial(
        local, definition, unit, ci_pipelines.run, label="test", pricing=PRICING, limits=FAST
    )


@pytest.mark.parametrize("slug", SLUGS)
def test_it_replays_each_pipeline_on_local_with_its_tests_passing_and_artifacts_pinned(local, slug):
    result = _trial(local, slug)
    assert (result.outcome, result.cause) == ("success", "")
    pipeline = load_pipeline(PIPELINES_DIR / slug / "pipeline.json")
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    # The result digest covers the checked-out commit and every artifact's SHA-256.
    assert replayed["digest"] == pipeline.patch_sha256
    assert [c[1] for c in replayed["commands"]] == [0] * len(pipeline.steps)
    values = {(m.kind, m.name): m.value for m in result.measurements}
    stages = {s: values[("stage", s)] for s in ci_pipelines.DEFINITION.stage_names}
    assert values[("metric", "pipeline_time")] == pytest.approx(sum(stages.values()))
    assert stages["Read"] == 0
    for stage in {s.stage for s in pipeline.steps}:
        assert stages[stage] > 0
    assert replayed["proxy_port"] > 0
    assert result.cost_usd > 0


@pytest.fixture
def altered_xxhash(tmp_path, monkeypatch):
    """A copy of xxhash-ci the test may change, which the benchmark then loads."""
    root = tmp_path / "pipelines"
    shutil.copytree(PIPELINES_DIR / "xxhash-ci", root / "xxhash-ci")
    monkeypatch.setattr(ci_pipelines, "PIPELINES_DIR", root)
    path = root / "xxhash-ci" / "pipeline.json"

    def alter(change):
        raw = json.loads(path.read_text())
        change(raw)
        path.write_text(json.dumps(raw))
        return UnitDefinition(slug="xxhash-ci")

    return alter


def test_an_artifact_that_differs_from_its_pin_excludes_the_trial(local, altered_xxhash):
    unit = altered_xxhash(lambda raw: raw["artifacts"][0].update(sha256="0" * 64))
    result = lifecycle.run_trial(
        local, ci_pipelines.DEFINITION, unit, ci_pipelines.run, label="test", limits=FAST
    )
    assert (result.outcome, result.owner) == ("excluded", "trace")
    assert result.cause.startswith("result (commit and artifacts) SHA-256 ")
    assert not [m for m in result.measurements if m.name == "pipeline_time"]
    # The output tail shows the listing hashed, so the artifact that differs can be named.
    tail = next(e.data for e in result.evidence if e.kind == "replay_output_tail")["text"]
    assert "  build/libxxhash.a" in tail and "0" * 64 not in tail


def test_a_failing_test_step_excludes_the_trial_naming_the_step(local, altered_xxhash):
    def failing_test(raw):
        raw["steps"][-1]["run"] = raw["steps"][-1]["run"].replace("0x02CC5D05ULL", "0x02CC5D06ULL")

    unit = altered_xxhash(failing_test)
    result = lifecycle.run_trial(
        local, ci_pipelines.DEFINITION, unit, ci_pipelines.run, label="test", limits=FAST
    )
    assert (result.outcome, result.owner) == ("excluded", "trace")
    assert result.cause.startswith("command 3 exited 1, the trace recorded 0")
    tail = next(e.data for e in result.evidence if e.kind == "replay_output_tail")["text"]
    assert "FAIL XXH32 empty" in tail
