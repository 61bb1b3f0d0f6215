"""Untimed, best-effort facts about where a trial's sandbox runs (its placement), kept with
the trial for the audit's host-type and region checks."""

from __future__ import annotations

PLACEMENT_PROBE = r"""
echo "nproc=$(nproc)"
echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel=$(uname -r)"
echo "mem_total_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
echo "workdir_device=$(df -P /app 2>/dev/null | awk 'NR==2 {print $1}')"
echo "workdir_fs=$(stat -f -c %T /app 2>/dev/null)"
echo "provider_region=${MODAL_REGION:-}"
"""


def probe_placement(ctx) -> dict:
    """Untimed, best-effort facts about where the sandbox runs, plus how its size was honoured."""
    facts = dict(ctx.sandbox.facts) if ctx.sandbox else {}
    try:
        result = ctx.provider.exec(ctx.sandbox, ["/bin/bash", "-c", PLACEMENT_PROBE], timeout=30)
    except Exception as exc:  # noqa: BLE001 - best effort: a failed probe is a recorded fact
        facts["probe_error"] = f"{type(exc).__name__}: {exc}"
        return facts
    for line in result.stdout.decode(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key] = value.strip()
    for key in ("nproc", "mem_total_kib"):
        if str(facts.get(key, "")).isdigit():
            facts[key] = int(facts[key])
    if "nproc" in facts:
        facts["cpu_count"] = facts["nproc"]  # the name stats.audit's host-type check reads
    facts["requested"] = {"cpus": ctx.spec.cpus, "memory_mib": ctx.spec.memory_mib}
    return facts
