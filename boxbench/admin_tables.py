"""The run admin's readable parts: one-line progress, audit and held-back summaries for the runs
list, and the manifest and the audit report as tables on a run's page (never raw JSON).

Summaries read the counts and verdicts every other room reads (runner.runs.progress,
holdbacks); the tables show what the run recorded, the main parts first and everything else
below, nested tables for nested records, so nothing recorded is hidden.
"""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from boxbench import holdbacks
from boxbench.models import Run
from runner import runs

# Lists longer than this are folded away in a <details>; a run's trial seqs can run to thousands.
FOLD_AFTER = 12
MAX_DEPTH = 4


def progress_text(run: Run) -> str:
    """ "281 / 280 successful, 1 failed, 0 waiting" over the run's planned pairs."""
    cells = [c for c in runs.progress(run) if "refusal" not in c]
    if not cells:
        return "no trials"
    done = sum(c["done"] for c in cells)
    target = sum(c["target"] for c in cells)
    failed = sum(c["failures"] for c in cells)
    waiting = sum(c["queued"] + c["running"] for c in cells)
    planned = f" / {target}" if target else ""
    return f"{done}{planned} successful, {failed} failed, {waiting} waiting"


def audit_text(run: Run) -> str:
    """ "not audited", "24 pairs pass", or "3 failing checks on 3 of 24 pairs (1 unresolved)"."""
    report = run.audit_report
    if not report:
        return "not audited"
    pairs = report.get("pairs", [])
    failing = holdbacks.failing_checks(report)
    if not failing:
        return f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''}: no failing check"
    unresolved = len(holdbacks.unresolved_failures(run))
    failed_pairs = len({(p, b) for p, b, _ in failing})
    return (
        f"{len(failing)} failing check{'s' if len(failing) != 1 else ''} on {failed_pairs} of "
        f"{len(pairs)} pairs ({unresolved} unresolved)"
    )


def held_back_text(run: Run) -> str:
    held = holdbacks.held_back([run])[run.id]
    return ", ".join(f"{p['provider']} / {p['benchmark']}" for p in held) or "none"


def manifest_tables(run: Run) -> SafeString:
    """The plan, the benchmarks and providers as planned and the refusals, then the rest."""
    manifest = run.manifest or {}
    if not manifest:
        return mark_safe("<p>No manifest recorded.</p>")
    plan = manifest.get("plan") or {}
    facts = {
        "seed": manifest.get("seed"),
        "benchmarks": plan.get("benchmarks"),
        "providers": plan.get("providers"),
        "trials per unit": plan.get("trials_per_unit") or "each benchmark's own",
        "parallel trials": plan.get("concurrency") or "each benchmark's declaration",
        "code": manifest.get("code"),
    }
    parts = [
        _titled("Plan", table(facts)),
        _titled("Benchmarks as planned", table(manifest.get("benchmarks") or {})),
        _titled("Providers and job hosts", table(manifest.get("providers") or {})),
    ]
    if manifest.get("refusals"):
        parts.append(_titled("Refused before the run started", table(manifest["refusals"])))
    shown = {"seed", "plan", "benchmarks", "providers", "refusals", "code"}
    rest = {k: v for k, v in manifest.items() if k not in shown and v not in (None, {}, [])}
    parts.append(_folded(f"Everything else recorded ({', '.join(rest)})", table(rest)))
    return format_html_join("", "{}", ((p,) for p in parts))


def audit_tables(run: Run, report: dict | None) -> SafeString:
    """One row per pair (verdict, trials, detectable effect, failing checks), then every check
    of the failing pairs, then the settings the audit used."""
    if not report:
        return mark_safe("<p>Not audited.</p>")
    rows = []
    for pair in report.get("pairs", []):
        effect = pair.get("detectable_effect") or {}
        failing = [n for n, c in pair.get("checks", {}).items() if c.get("verdict") == "fail"]
        rows.append(
            {
                "pair": f"{pair['provider']} / {pair['benchmark']}",
                "verdict": pair.get("verdict"),
                "successful trials": pair.get("n"),
                "detectable effect": "unbounded"
                if effect.get("unbounded")
                else _percent(effect.get("percent_of_median")),
                "failing checks": ", ".join(failing) or "none",
            }
        )
    parts = [_titled("Pairs", table(rows))]
    for pair in report.get("pairs", []):
        if pair.get("verdict") == "fail":
            checks = [{"check": n, **c} for n, c in pair.get("checks", {}).items()]
            title = f"Checks of {pair['provider']} / {pair['benchmark']}"
            parts.append(_titled(title, table(checks)))
    settings = {k: v for k, v in report.items() if k not in ("pairs",)}
    parts.append(_folded("Settings, families and sources of this audit", table(settings)))
    return format_html_join("", "{}", ((p,) for p in parts))


def table(value, depth: int = 0) -> SafeString:
    """Any recorded JSON value as HTML: a record as a two-column table, a list of records as a
    table with a column per key, a list of plain values on one line, long lists folded."""
    if depth > MAX_DEPTH:
        return format_html("<code>{}</code>", str(value)[:500])
    if isinstance(value, dict):
        if not value:
            return mark_safe("—")
        body = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td></tr>",
            ((_label(k), table(v, depth + 1)) for k, v in value.items()),
        )
        return format_html('<table class="recorded">{}</table>', body)
    if isinstance(value, list):
        if not value:
            return mark_safe("—")
        if all(isinstance(v, dict) for v in value):
            shown = _records(value, depth)
        else:
            shown = format_html_join(", ", "{}", ((table(v, depth + 1),) for v in value))
        if len(value) > FOLD_AFTER:
            return _folded(f"{len(value)} entries", shown)
        return shown
    if value is None:
        return mark_safe("—")
    if isinstance(value, bool):
        return mark_safe("yes" if value else "no")
    if isinstance(value, float):
        return format_html("{}", f"{value:.6g}")
    return format_html("{}", value)


def _records(items: list[dict], depth: int) -> SafeString:
    columns: list[str] = []
    for item in items:
        columns += [k for k in item if k not in columns]
    head = format_html_join("", "<th>{}</th>", ((_label(c),) for c in columns))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        (
            (format_html_join("", "<td>{}</td>", ((table(i.get(c), depth + 1),) for c in columns)),)
            for i in items
        ),
    )
    return format_html('<table class="recorded"><tr>{}</tr>{}</table>', head, body)


def _label(key) -> str:
    return str(key).replace("_", " ")


def _percent(value) -> str:
    return "—" if value is None else f"{value:.3g} % of the median"


def _titled(title: str, content: SafeString) -> SafeString:
    return format_html("<h4>{}</h4>{}", title, content)


def _folded(summary: str, content: SafeString) -> SafeString:
    return format_html("<details><summary>{}</summary>{}</details>", summary, content)
