"""Isolation: what a sandbox really is, declared against detected. Untimed, never scored.

Each probe group (runner/benchmarks/isolation_probes.py) runs one short Python script in the
sandbox through an untimed exec and answers one JSON object; the readings are stored as metrics
of the trial, each with its unit, and every raw answer as private evidence, its host
identifiers withheld (`private_answer`). A group that cannot
run (no python3 in the image, a crash) records nothing for its readings and keeps the reason; an
answer that does not parse is a benchmark error naming the probe. The main metric,
`probes_answered`, counts the readings the trial gave.

The sandbox is the benchmark's default: the requested size and the network cut off, as every
other benchmark asks. `kernel_shared` compares the sandbox's boot_id with this job host's.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.benchmarks import isolation_probes as probes
from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, Direction, EvidenceKind, Section
from stats.summary import PROBE

SLUG = "isolation"
# Per group: the exec's own limit, above the probe's bounded runtime.
LIMITS_S = {"cpu_burn": 30.0, "memory": 90.0, "operations": 60.0}
DEFAULT_LIMIT_S = 30.0
EVIDENCE_BYTES = 2000  # of each raw answer kept as evidence
# Answer fields that identify the provider's host ("no provider host or zone identifier is
# collected"): the evidence keeps what the readings need of them, never the text itself.
# kernel_shared already records whether the boot_id is the job host's.
WITHHELD = {"kernel": ("boot_id",), "virt": ("cgroup", "proc_version")}

DEFINITION = BenchmarkDefinition(
    slug=SLUG,
    title="Isolation",
    section=Section.MACHINE_PERFORMANCE,
    description=(
        "What a sandbox really is: CPUs and memory visible against enforced, the kernel, the "
        "hypervisor or container runtime seen from inside, egress with the network cut off, and "
        "which risky system calls are refused. Probes, untimed and never scored."
    ),
    metric="probes_answered",
    unit="readings",
    direction=Direction.HIGHER,
    clock=Clock.GUEST,
    statistic=PROBE,
    readings=probes.PROBES,
    trials_per_unit=3,
    ranking_floor=3,
    required_capabilities=("exec",),
    charted=False,
    # One trial at a time per provider: two CPU burns or allocations at once would each read
    # the other's load as the sandbox's limit.
    parallel_trials=1,
    procedure_timeout_s=300.0,
    lifetime_s=600.0,
)


def units() -> list[UnitDefinition]:
    parameters = {
        "probes": [p.name for p in probes.PROBES],
        "burn_seconds": probes.BURN_SECONDS,
        "allocation_headroom": probes.ALLOCATION_HEADROOM,
        "egress_address": list(probes.EGRESS_ADDRESS),
        "operations": list(probes.OPERATIONS),
    }
    return [UnitDefinition("default", "Default sandbox", definition=parameters)]


def host_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def run(ctx: TrialContext) -> None:
    cpus, memory = ctx.definition.cpus, ctx.definition.memory_mib
    readers = {
        "resources": probes.read_resources,
        "cpu_burn": lambda data: probes.read_cpu_burn(data, cpus),
        "memory": lambda data: probes.read_memory(data, memory),
        "kernel": lambda data: probes.read_kernel(data, host_boot_id()),
        "virt": probes.read_virt,
        "egress": probes.read_egress,
        "operations": probes.read_operations,
    }
    answered = 0
    for group, script in probes.scripts(cpus, memory).items():
        answer = _probe(ctx, group, script, readers[group])
        for name, value in answer.readings.items():
            ctx.record(name, value, unit=probes.BY_NAME[name].unit, clock=Clock.GUEST)
        answered += len(answer.readings)
    ctx.record(DEFINITION.metric, answered, unit=DEFINITION.unit, clock=Clock.GUEST)


def _probe(ctx: TrialContext, group: str, script: str, reader) -> probes.Answer:
    names = [p.name for p in probes.PROBES if p.group == group]
    limit = LIMITS_S.get(group, DEFAULT_LIMIT_S)
    result = ctx.exec(["python3", "-I", "-c", script], timeout=limit)
    evidence = {
        "probe": group,
        "exit_code": result.exit_code,
        "stdout": private_answer(group, result.stdout),
        "stderr": result.stderr[-EVIDENCE_BYTES:].decode(errors="replace"),
    }
    if result.exit_code != 0:
        why = (
            "python3 is not in the sandbox's image"
            if result.exit_code == 127
            else f"the probe exited {result.exit_code}"
        )
        ctx.evidence(
            EvidenceKind.ISOLATION_PROBE, {**evidence, "missing": dict.fromkeys(names, why)}
        )
        return probes.Answer(missing=dict.fromkeys(names, why))
    try:
        answer = reader(probes.decode(group, result.stdout))
    except probes.ProbeError as exc:
        # The error quotes the answer, which may hold a host identifier: say only what failed.
        why = f"probe {group}: its answer does not read" if group in WITHHELD else str(exc)
        ctx.evidence(EvidenceKind.ISOLATION_PROBE, {**evidence, "error": why})
        raise BenchmarkError(why) from None
    ctx.evidence(EvidenceKind.ISOLATION_PROBE, {**evidence, "missing": answer.missing})
    return answer


def private_answer(group: str, stdout: bytes) -> str:
    """A probe's raw answer as evidence keeps it, its host identifiers withheld (WITHHELD)."""
    fields = WITHHELD.get(group)
    if not fields:
        return stdout[:EVIDENCE_BYTES].decode(errors="replace")
    try:
        data = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    if not isinstance(data, dict):
        return f"(withheld: {len(stdout)} bytes that are not one JSON object)"
    for key in fields:
        if isinstance(data.get(key), str):
            data[key] = _withheld(key, data[key])
    return json.dumps(data)[:EVIDENCE_BYTES]


def _withheld(key: str, text: str) -> str:
    if key == "cgroup":  # what runtime_cgroup_named reads from it, and no more
        named = [w for w in probes.CONTAINER_CGROUP_WORDS if w in text]
        return f"(withheld; names {', '.join(named)})" if named else "(withheld; names none)"
    return "(withheld)"
