"""CI pipeline units: the shipped set, strict validation, reproducible bundles, the result digest,
declared stages and the benchmark's definition."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.benchmarks import ci_pipelines
from runner.pipelines.bundle import make_bundle, prepare_script
from runner.pipelines.format import (
    KINDS,
    PIPELINES_DIR,
    WHEELHOUSE,
    Artifact,
    PipelineError,
    load_all,
    load_pipeline,
    result_digest,
    verify_snippet,
)
from runner.pipelines.record import record
from runner.traces import replay
from runner.traces.classify import BUILD, TEST, classify
from runner.traces.format import TRACES_DIR, sha256_file

XXHASH = PIPELINES_DIR / "xxhash-ci" / "pipeline.json"


@pytest.fixture
def raw():
    return json.loads(XXHASH.read_text())


def test_it_ships_six_units_over_python_and_c_spanning_an_order_of_magnitude():
    pipelines = load_all()
    assert len(pipelines) >= 6
    assert {p.ecosystem for p in pipelines} == {"python", "c"}
    assert all(sum(p.ecosystem == e for p in pipelines) >= 3 for e in ("python", "c"))
    recorded = [p.recorded_ms for p in pipelines]
    assert max(recorded) >= 10 * min(recorded)


def test_it_keeps_every_unit_small_with_its_wheels_and_every_file_pinned():
    for pipeline in load_all():
        files = [pipeline.bundle_path, pipeline.folder / "pipeline.json"]
        files += [pipeline.wheel_path(w) for w in pipeline.wheels]
        assert sum(f.stat().st_size for f in files) < 1024 * 1024, pipeline.slug
        assert pipeline.source["url"].startswith("https://pypi.org/project/")
    # The shared wheelhouse holds exactly the wheels some unit pins.
    pinned = {w.file for p in load_all() for w in p.wheels}
    assert {f.name for f in WHEELHOUSE.iterdir()} == pinned
    for pipeline in load_all():
        assert pipeline.steps[0].kind == "checkout"
        assert {s.kind for s in pipeline.steps} >= {"checkout", "build", "test"}


def _source_archive(pipeline) -> Path:
    """The pinned sdist the bundle was made from, shipped with the DeepSWE units."""
    for archive in TRACES_DIR.glob("*/*.tar.gz"):
        if archive.name == pipeline.source["archive"]:
            assert sha256_file(archive) == pipeline.source["sha256"]
            return archive
    raise AssertionError(f"{pipeline.slug}: no {pipeline.source['archive']} under runner/traces")


@pytest.mark.parametrize("pipeline", load_all(), ids=lambda p: p.slug)
def test_it_rebuilds_each_bundle_byte_for_byte_from_its_pinned_source_archive(pipeline, tmp_path):
    out = tmp_path / pipeline.bundle.file
    commit = make_bundle(_source_archive(pipeline), out, f"boxbench: {pipeline.slug}")
    assert commit == pipeline.commit
    assert sha256_file(out) == pipeline.bundle.sha256


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.update(extra=1), "extra: unknown field"),
        (lambda r: r.update(schema_version=2), "schema_version: must be 1"),
        (lambda r: r.update(slug="other-ci"), "must match the unit folder name"),
        (lambda r: r.update(ecosystem="rust"), "ecosystem: must be one of python, c"),
        (lambda r: r["steps"][1].update(kind="deploy"), r"steps\[1\].kind: must be one of"),
        (lambda r: r["steps"][1].update(duration_ms=True), r"steps\[1\].duration_ms"),
        (lambda r: r["steps"][1].update(run="  "), r"steps\[1\].run: must be a non-empty"),
        (lambda r: r["steps"][0].update(kind="build"), "only the first, must be the checkout"),
        (lambda r: r["steps"][2].update(kind="checkout"), "only the first, must be the checkout"),
        (lambda r: r.update(steps=[]), "steps: must be a list of 2 to 20 steps"),
        (lambda r: r.update(steps="make"), "steps: must be a list"),
        (lambda r: r.update(artifacts=[]), "artifacts: must be a non-empty list"),
        (lambda r: r["artifacts"][0].update(path="../x"), r"artifacts\[0\].path: must be a plain"),
        (lambda r: r["artifacts"][0].update(path="a b"), r"artifacts\[0\].path: must be a plain"),
        (lambda r: r["artifacts"][0].update(sha256="X" * 64), r"artifacts\[0\].sha256"),
        (lambda r: r["bundle"].update(commit="abc"), "bundle.commit: must be 40"),
        (lambda r: r["bundle"].update(file="../b.bundle"), "bundle.file: must be a plain"),
        (lambda r: r.update(wheels=[{"file": "x.whl"}]), r"wheels\[0\].sha256"),
        (lambda r: r.update(source=None), "source: must be an object"),
        (lambda r: r.update(title=3), "title: must be a non-empty string"),
    ],
)
def test_it_refuses_a_malformed_pipeline_naming_the_file_and_field(raw, tmp_path, change, message):
    folder = tmp_path / "xxhash-ci"
    folder.mkdir()
    change(raw)
    path = folder / "pipeline.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(PipelineError, match=f"{path}: .*{message}"):
        load_pipeline(path, check_files=False)


def test_it_refuses_a_file_that_is_not_json_or_not_there(tmp_path):
    path = tmp_path / "pipeline.json"
    path.write_bytes(b"\xff{")
    with pytest.raises(PipelineError, match="not valid JSON"):
        load_pipeline(path)
    with pytest.raises(PipelineError, match="no such pipeline file"):
        load_pipeline(tmp_path / "nope.json")


def test_it_refuses_a_bundle_or_wheel_that_differs_from_its_pin(tmp_path):
    folder = tmp_path / "inflection-ci"
    shutil.copytree(PIPELINES_DIR / "inflection-ci", folder)
    pipeline = load_pipeline(folder / "pipeline.json")
    bundle = folder / pipeline.bundle.file
    bundle.write_bytes(bundle.read_bytes() + b"x")
    with pytest.raises(PipelineError, match=r"bundle: .* has SHA-256 .*, the pipeline pins"):
        load_pipeline(folder / "pipeline.json")
    bundle.unlink()
    with pytest.raises(PipelineError, match="bundle: .* is missing"):
        load_pipeline(folder / "pipeline.json")


def _bash(script: str, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", script + 'printf "%s" "$__bb_digest"'],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(cwd)},
    )
    return done.stdout


def test_the_verify_snippet_hashes_the_commit_and_artifacts_as_pinned(tmp_path):
    pipeline = load_pipeline(XXHASH)
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "fetch", "-q", str(pipeline.bundle_path), "main"], check=True
    )
    subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "FETCH_HEAD"], check=True)
    (tmp_path / "build").mkdir()
    (tmp_path / "build/libxxhash.a").write_bytes(b"not the library")
    snippet = "exec 4>/dev/null\n" + verify_snippet(pipeline)
    wrong = _bash(snippet, tmp_path)
    artifact = Artifact("build/libxxhash.a", sha256_file(tmp_path / "build/libxxhash.a"))
    assert wrong == result_digest(pipeline.commit, (artifact,))
    assert wrong != pipeline.patch_sha256
    (tmp_path / "build/libxxhash.a").unlink()  # a missing artifact matches no pin either
    assert _bash(snippet, tmp_path) not in (pipeline.patch_sha256, wrong)


def test_it_counts_each_step_under_its_declared_kinds_stage():
    pipeline = load_pipeline(XXHASH)
    test_step = next(s for s in pipeline.steps if s.kind == "test")
    # A C test compiles its test program before running it: the parser reads a build.
    assert classify(test_step.run) == BUILD and test_step.stage == TEST
    runs = [replay.CommandRun(i, 0, 100.0 * (i + 1), 100.0 * (i + 1)) for i in range(4)]
    records = replay.ReplayRecords(commands=runs, digest=pipeline.patch_sha256, done=True)
    verdict = replay.judge(pipeline, records, pipeline.stages, "result")
    assert verdict.outcome == "success"
    expected = dict.fromkeys(verdict.stage_ms, 0.0)
    for step, run in zip(pipeline.steps, runs, strict=True):
        expected[KINDS[step.kind]] += run.wall_ms
    assert verdict.stage_ms == expected and verdict.tool_time_ms == 1000.0
    mismatch = replay.ReplayRecords(commands=runs, digest="0" * 64, digest_mismatch=True)
    verdict = replay.judge(pipeline, mismatch, pipeline.stages, "result (commit and artifacts)")
    assert verdict.outcome == "excluded"
    assert verdict.cause.startswith("result (commit and artifacts) SHA-256 " + "0" * 64)


def test_the_replay_script_runs_each_step_with_the_fixed_mask_and_date_then_verifies():
    pipeline = load_pipeline(XXHASH)
    script = replay.replay_script(pipeline, verify=verify_snippet(pipeline))
    assert script.count("umask 022; export SOURCE_DATE_EPOCH=1735689600; ") == len(pipeline.steps)
    assert "git rev-parse HEAD; sha256sum -- build/libxxhash.a" in script
    assert "git --no-pager diff" not in script  # the patch digest is replaced, not added to
    assert f'!= "{pipeline.patch_sha256}"' in script
    assert "git init -q -b main ." in prepare_script()


def test_the_benchmark_declares_its_units_floor_and_that_they_are_its_own():
    definition = ci_pipelines.DEFINITION
    units = ci_pipelines.units()
    assert (definition.section, definition.metric, definition.clock) == (
        "workload",
        "pipeline_time",
        "guest",
    )
    # 90% of 20 trials on each of the seven units, as DeepSWE's floor across its units.
    assert definition.ranking_floor == 126 == -(-9 * 20 * len(units) // 10)
    assert "boxbench's own units" in definition.description
    assert "boxbench's own" in ci_pipelines.NOT_THE_REFERENCE
    assert all(u.definition["own_units"] == ci_pipelines.NOT_THE_REFERENCE for u in units)
    assert len({u.digest for u in units}) == len(units)


def _stale_copy(tmp_path, change=None):
    folder = tmp_path / "xxhash-ci"
    shutil.copytree(PIPELINES_DIR / "xxhash-ci", folder)
    raw = json.loads((folder / "pipeline.json").read_text())
    raw["bundle"].update(commit="0" * 40, sha256="0" * 64)
    for step in raw["steps"]:
        step["duration_ms"] = 0
    raw["artifacts"][0]["sha256"] = "0" * 64
    if change:
        change(raw)
    (folder / "pipeline.json").write_text(json.dumps(raw))
    (folder / raw["bundle"]["file"]).unlink()
    return folder


def test_recording_a_unit_anew_on_this_host_gives_its_shipped_pins(tmp_path):
    shipped = load_pipeline(XXHASH)
    record(_stale_copy(tmp_path))
    recorded = load_pipeline(tmp_path / "xxhash-ci/pipeline.json")
    assert (recorded.commit, recorded.bundle.sha256) == (shipped.commit, shipped.bundle.sha256)
    assert recorded.artifacts == shipped.artifacts
    assert all(step.duration_ms > 0 for step in recorded.steps)


def test_recording_names_the_step_that_fails(tmp_path):
    folder = _stale_copy(
        tmp_path, lambda raw: raw["steps"][1].update(run="echo broken >&2; exit 3")
    )
    with pytest.raises(PipelineError, match=r"steps\[1\] exited 3:\nbroken"):
        record(folder)
