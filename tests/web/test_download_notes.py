"""Every workload is boxbench's own substitute for the methodology's reference set, so every one
of its CSV downloads says so in a last column, `note` (docs/methodology.md): DeepSWE, CI Actions
and RL rollouts alike."""

import pytest

from boxbench.leaderboard.boards import DOWNLOAD_NOTES
from runner.benchmarks import all_benchmarks

pytestmark = pytest.mark.django_db


def test_every_workload_says_on_its_downloads_that_it_is_not_the_reference():
    workloads = {
        slug for slug, module in all_benchmarks().items() if module.DEFINITION.section == "workload"
    }
    assert workloads and workloads <= set(DOWNLOAD_NOTES)
    assert all("not" in DOWNLOAD_NOTES[slug] for slug in workloads)
