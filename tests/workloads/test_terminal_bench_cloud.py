"""Terminal-Bench tasks whose Dockerfile needs a real image build, on the cloud adapters' fakes:
E2B builds the task's template through its template API (once per task digest, at the task's
size) and Modal its image through `Image.from_dockerfile`; Vercel, which takes no image, reads
Not Supported with its reason; a build the provider reports as failed is the task's failure
there, not the provider's."""

import importlib.util
import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from boxbench import publishing
from boxbench.models import Evidence, Run, Trial
from runner import chain, lifecycle, rules
from runner.benchmarks import terminal_bench
from runner.declarations import get_declaration
from runner.outcomes import EvidenceKind
from runner.tasks import imported
from runner.tasks.format import TASKS_DIR
from tests.providers.cloud.helpers import LIMITS, running_cloud, unspaced_creates

# Found, not imported: E2B's SDK reads E2B_CONNECTION_RETRIES once, when first imported, and
# the adapter sets it to 0 just before. Imported here at collection, the SDK kept its 3
# connection retries in the worker, and test_e2bs_sdk_sends_each_call_once failed after it.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("e2b") is None, reason="the e2b SDK is optional"
)

SLUG = "built-wordfreq"


def _needing_a_build(source, run_line="RUN echo built > /app/task-image"):
    """A shipped C task whose Dockerfile uses SHELL and USER, which no sandbox replays: only an
    image build makes its environment."""
    folder = source / SLUG
    shutil.copytree(TASKS_DIR / "c-build-wordfreq", folder)
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().replace("WORKDIR /app", 'SHELL ["/bin/bash", "-c"]\nWORKDIR /app')
        + f"{run_line}\nUSER root\n"
    )
    return source


@pytest.fixture
def own_tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    return tmp_path / "source"


def _unit():
    return next(u for u in terminal_bench.units() if u.slug == SLUG)


def _trial(cloud):
    return lifecycle.run_trial(
        cloud.provider,
        terminal_bench.DEFINITION,
        _unit(),
        terminal_bench.run,
        label="bb-pytest-cloud",
        limits=LIMITS,
    )


@pytest.mark.parametrize("slug", ["e2b", "modal"])
def test_a_cloud_builds_the_tasks_image_once_and_its_trials_start_from_it(
    slug, own_tasks, tmp_path
):
    imported.import_tasks(_needing_a_build(own_tasks))
    assert rules.unit_refusals(get_declaration(slug), terminal_bench.DEFINITION, [_unit()]) == []
    with running_cloud(slug, tmp_path / "fake") as cloud:
        first, second = _trial(cloud), _trial(cloud)
        built = _builds(cloud)
    assert [(r.outcome, r.cause) for r in (first, second)] == [("success", "")] * 2
    # One build for both trials.
    [identifier] = built
    [image] = [e.data for e in first.evidence if e.kind == EvidenceKind.TASK_IMAGE]
    assert image["task_image"] == identifier
    [again] = [e.data for e in second.evidence if e.kind == EvidenceKind.TASK_IMAGE]
    assert again["task_image"] == identifier


def _builds(cloud) -> list[str]:
    """The images each fake built, by its immutable identifier."""
    if cloud.slug == "e2b":
        builds = list(cloud.fake.template_builds.builds.values())
        # E2B fixes a template's size at build: the task's.
        assert [(b.status, b.cpus, b.memory_mib) for b in builds] == [("ready", 2, 4096)]
        return [b.template_id for b in builds]
    return list(cloud.fake.image_builds.builds)


@pytest.mark.parametrize(
    ("slug", "words"), [("e2b", "E2B's build of template"), ("modal", "Modal's image build failed")]
)
def test_a_build_the_provider_reports_failed_is_the_tasks_failure_not_the_providers(
    slug, words, own_tasks, tmp_path
):
    imported.import_tasks(_needing_a_build(own_tasks, run_line="RUN echo no >&2; exit 7"))
    with running_cloud(slug, tmp_path / "fake") as cloud:
        results = [_trial(cloud), _trial(cloud)]
        # Built once: the second trial reads the same failure, not a second build.
        if slug == "e2b":
            [build] = cloud.fake.template_builds.builds.values()
            assert build.status == "error" and "exit status 7" in build.reason["message"]
        else:
            [build] = cloud.fake.image_builds.builds.values()
            assert "exit status 7" in build.error
    for result in results:
        assert result.outcome == "benchmark_error" and result.owner != "provider"
        assert f"task {SLUG}: {words}" in result.cause
        assert "exit status 7" in result.cause


def test_a_multi_stage_dockerfile_fails_to_build_on_both_clouds_as_each_answers(
    own_tasks, tmp_path
):
    """E2B's template builder takes one stage only (its SDK refuses before any request); Modal
    builds several, which its fake does not serve and answers as a failed build."""
    source = _needing_a_build(own_tasks)
    dockerfile = source / SLUG / "environment" / "Dockerfile"
    dockerfile.write_text("FROM boxbench-standard AS tools\n" + dockerfile.read_text())
    imported.import_tasks(source)
    causes = {}
    for slug in ("e2b", "modal"):
        with running_cloud(slug, tmp_path / slug) as cloud:
            result = _trial(cloud)
        assert result.outcome == "benchmark_error"
        causes[slug] = result.cause
    assert "Multi-stage Dockerfiles are not supported" in causes["e2b"]
    assert "several build stages are not served" in causes["modal"]


def test_vercel_which_takes_no_image_reads_not_supported_with_the_reason(own_tasks):
    imported.import_tasks(_needing_a_build(own_tasks))
    [refused] = rules.unit_refusals(get_declaration("vercel"), terminal_bench.DEFINITION, [_unit()])
    assert (refused.code, refused.label, refused.unit) == ("R401", "Not Supported", SLUG)
    assert "needs an image build (line 2: SHELL is not replayed)" in refused.message
    assert "Vercel sandboxes start only from Vercel's own runtimes" in refused.message


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_builds_on_e2b_and_modal_refuses_vercel_and_shows_on_the_run_page(
    own_tasks, monkeypatch, sync_queue, client, django_user_model
):
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    unspaced_creates(monkeypatch)
    argv = ["--demo", "--provider", "e2b,modal,vercel", "--benchmark", "terminal-bench"]
    argv += ["--tasks", str(_needing_a_build(own_tasks)), "--trials", "1", "--publish"]
    with pytest.raises(CommandError, match="demo run against loopback fakes"):
        call_command("bench", "run", *argv, stdout=io.StringIO())
    run = Run.objects.get()
    assert run.status == "completed" and run.audit_report
    trials = Trial.objects.filter(run=run).order_by("provider__slug")
    assert [(t.provider.slug, t.outcome) for t in trials] == [
        ("e2b", "success"),
        ("modal", "success"),
    ]
    for trial in trials:
        assert Evidence.objects.filter(trial=trial, kind=EvidenceKind.TASK_IMAGE).exists()
    [refusal] = [r for r in run.manifest["refusals"] if r["provider"] == "vercel"]
    assert refusal["code"] == "R401" and "Vercel's own runtimes" in refusal["message"]
    with pytest.raises(publishing.PublishRefused, match="demo run"):
        publishing.publish(run)
    client.force_login(django_user_model.objects.create_superuser("staff", password="pw"))
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Demo run, not a measurement" in page and "vercel" in page


def _at_harbors_default_size(source):
    """A shipped task on the standard image, declaring Harbor's default 1 vCPU / 2 GiB."""
    folder = source / "small-sales"
    shutil.copytree(TASKS_DIR / "csv-sales-summary", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 2", "cpus = 1").replace("4096", "2048"))
    return source


def test_harbors_default_size_is_offered_where_the_providers_docs_offer_it(own_tasks):
    imported.import_tasks(_at_harbors_default_size(own_tasks))
    unit = next(u for u in terminal_bench.units() if u.slug == "small-sales")
    refused = {
        slug: [
            (r.code, r.missing)
            for r in rules.unit_refusals(get_declaration(slug), terminal_bench.DEFINITION, [unit])
        ]
        for slug in ("vercel", "modal", "e2b", "daytona")
    }
    assert refused["vercel"] == refused["modal"] == []
    assert refused["e2b"] == refused["daytona"] == [("R402", "1 vCPU / 2048 MiB")]


@pytest.mark.parametrize("slug", ["vercel", "modal"])
def test_a_task_at_one_vcpu_runs_in_a_one_vcpu_sandbox(slug, own_tasks, tmp_path):
    imported.import_tasks(_at_harbors_default_size(own_tasks))
    unit = next(u for u in terminal_bench.units() if u.slug == "small-sales")
    with running_cloud(slug, tmp_path / "fake") as cloud:
        # What the fake gave each sandbox, as the provider would allocate it.
        reserve, sizes = cloud.fake.backend.reserve, []

        def sized(*args, **kwargs):
            box = reserve(*args, **kwargs)
            sizes.append((box.cpus, box.memory_mib))
            return box

        cloud.fake.backend.reserve = sized
        result = lifecycle.run_trial(
            cloud.provider,
            terminal_bench.DEFINITION,
            unit,
            terminal_bench.run,
            label="bb-pytest-cloud",
            limits=LIMITS,
        )
    [made] = [e.data for e in result.evidence if e.kind == EvidenceKind.SANDBOX]
    assert (result.outcome, result.cause) == ("success", "")
    assert (made["facts"]["cpus"], made["facts"]["memory_mib"]) == (1, 2048)
    assert sizes == [(1, 2048)]
