"""The run manifest as a type: what the planner writes reads back unchanged, a malformed manifest
is refused naming its field, and imported manifests may hold only some sections."""

import pytest

from runner.manifest import (
    MANIFEST_SCHEMA,
    ChainPlan,
    LiveCheck,
    Manifest,
    ManifestError,
    Plan,
    PlannedBenchmark,
    ProviderEntry,
    TopUps,
)
from runner.rules import Refusal


def planned() -> Manifest:
    manifest = Manifest(
        seed=7,
        plan=Plan(benchmarks=["create"], providers=["local", "docker"], job_host_cap=16),
        refusals=[Refusal("docker", "create", "R401", "snapshot", "docker lacks snapshot")],
    )
    manifest.benchmarks["create"] = PlannedBenchmark(trials_per_unit=20, units=["default"])
    manifest.providers["local"] = ProviderEntry(job_host="job-1", seq_base=0)
    manifest.chains["local"] = ChainPlan(order=[("create", 1), ("create", 2)])
    return manifest


def test_it_writes_every_section_and_reads_it_back_unchanged():
    stored = planned().to_json()
    assert stored["schema_version"] == MANIFEST_SCHEMA
    assert stored["chains"] == {"local": {"order": [["create", 1], ["create", 2]]}}
    assert stored["stopped_units"] == [] and stored["topups"] == {}
    assert "batches_stopped_early" not in stored  # written once a batch stops early
    assert Manifest.from_json(stored) == planned()
    assert Manifest.from_json(stored).to_json() == stored


def test_it_records_changes_in_the_shape_the_pages_read():
    manifest = planned()
    manifest.stop_unit("local", "create", "default")
    manifest.stop_unit("local", "create", "default")  # once only
    manifest.record_live("local", "before_chain", LiveCheck(others=0, other_ids=[], own=0, at="t"))
    manifest.topups["local"] = TopUps(rounds=0, stopped="every unit reached its target")
    manifest.stop_chain("local", stopped="the run was cancelled")
    stored = manifest.to_json()
    assert stored["stopped_units"] == [["local", "create", "default"]]
    assert stored["live_sandboxes"]["local"]["before_chain"] == {
        "others": 0,
        "other_ids": [],
        "own": 0,
        "at": "t",
    }
    assert stored["chains"]["local"]["stopped"] == "the run was cancelled"
    assert "error" not in stored["chains"]["local"]


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ([], "must be a JSON object, not list"),
        ({"schema_version": 2}, "has schema_version 2; this version reads 1"),
        ({"seed": "seven"}, r"got `str` - at `\$.seed`"),
        ({"chains": {"local": {"order": [["create", "one"]]}}}, "order"),
        ({"chains": {"local": {"order": [], "stopped": 5}}}, "stopped"),
        ({"benchmarks": {"create": {"trials_per_unit": 0}}}, ">= 1"),
        ({"benchmarks": {"create": {"trials_per_unit": True}}}, "got `bool`"),
        ({"refusals": [{"provider": "docker"}]}, "missing required field `benchmark`"),
    ],
)
def test_it_refuses_a_malformed_manifest_naming_the_field(stored, message):
    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(stored, where="run r")


def test_it_reads_an_imported_manifest_with_only_some_sections():
    manifest = Manifest.from_json({"seed": 7, "image_digests": {"standard": "sha256:ab"}})
    assert manifest.plan is None and manifest.chains == {} and manifest.refusals == []
    assert manifest.digest_for("create") == "sha256:ab"
    assert manifest.planned_successes() is None


def test_it_reads_a_chain_that_still_records_a_status_and_writes_it_back_without():
    # Runs planned before ChainProgress became a chain's one state (and files exported from them)
    # carry chains.<provider>.status; migration 0013 removed it from the runs planned here.
    stored = {"chains": {"local": {"order": [["create", 1]], "status": "done", "error": "boom"}}}
    manifest = Manifest.from_json(stored)
    assert manifest.chains["local"] == ChainPlan(order=[("create", 1)], error="boom")
    assert manifest.to_json()["chains"] == {"local": {"order": [["create", 1]], "error": "boom"}}
