"""Every workload is boxbench's own substitute for the methodology's reference set, so every one
of its CSV downloads says so in a last column, `note` (docs/methodology.md): DeepSWE, CI Actions
and RL rollouts alike."""

import pytest

from runner.benchmarks import all_benchmarks

pytestmark = pytest.mark.django_db


def test_every_workload_says_on_its_downloads_that_it_is_not_the_reference():
    workloads = [
        module.DEFINITION
        for module in all_benchmarks().values()
        if module.DEFINITION.section == "workload"
    ]
    assert workloads
    assert all("not" in definition.download_note for definition in workloads)
