"""Export: a run streamed with constant memory as JSON Lines or a flat CSV.

Trials are read in keyset-paginated pages and their measurements fetched per page.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import orjson
from django.db import connection, transaction

from boxbench.models import (
    Benchmark,
    Measurement,
    MeasurementKind,
    Provider,
    Run,
    Trial,
    Unit,
)
from boxbench.rawdata.schema import (
    BENCHMARK_FIELDS,
    CSV_COLUMNS,
    PAGE_SIZE,
    PROVIDER_FIELDS,
    SCHEMA_VERSION,
    UNIT_FIELDS,
    RawDataError,
    _dumps,
    _iso,
)


def run_header(run: Run) -> dict:
    trials = Trial.objects.filter(run=run).order_by()
    cells = trials.values_list("benchmark_id", "unit_id", "provider_id").distinct()
    benchmark_ids, unit_ids, provider_ids = (set(column) for column in zip(*cells, strict=False))
    meta = _measurement_meta(run)
    benchmarks = []
    units = Unit.objects.filter(id__in=unit_ids).order_by("slug")
    for benchmark in Benchmark.objects.filter(id__in=benchmark_ids).order_by("slug", "version"):
        entry = {name: getattr(benchmark, name) for name in BENCHMARK_FIELDS}
        entry["units"] = [
            {name: getattr(unit, name) for name in UNIT_FIELDS}
            for unit in units
            if unit.benchmark_id == benchmark.id
        ]
        entry["measurements"] = meta.get(benchmark.id, {"metrics": {}, "stages": {}})
        benchmarks.append(entry)
    providers = [
        {name: getattr(provider, name) for name in PROVIDER_FIELDS}
        for provider in Provider.objects.filter(id__in=provider_ids).order_by("slug")
    ]
    return {
        "type": "run",
        "schema_version": SCHEMA_VERSION,
        "run": {
            "id": str(run.id),
            "name": run.name,
            "status": run.status,
            "created_at": _iso(run.created_at),
            "started_at": _iso(run.started_at),
            "ended_at": _iso(run.ended_at),
        },
        "manifest": run.manifest,
        "audit_report": run.audit_report,
        "benchmarks": benchmarks,
        "providers": providers,
    }


def _measurement_meta(run: Run) -> dict[int, dict]:
    """Unit and clock of each measurement name, declared once per benchmark in the header.

    One grouped pass over the run's measurements serves every benchmark."""
    rows = (
        Measurement.objects.filter(trial__run=run)
        .values_list("trial__benchmark_id", "kind", "name", "unit", "clock")
        .distinct()
        .order_by()
    )
    meta: dict[int, dict] = {}
    for benchmark_id, kind, name, unit, clock in sorted(rows):
        groups = meta.setdefault(benchmark_id, {"metrics": {}, "stages": {}})
        group = groups["metrics" if kind == MeasurementKind.METRIC else "stages"]
        if name in group:
            slug = Benchmark.objects.get(id=benchmark_id).slug
            raise RawDataError(
                f"benchmark {slug}: measurement {name!r} is stored with two units or "
                "clocks; the raw-data format needs one per name"
            )
        group[name] = {"unit": unit, "clock": clock}
    return meta


TRIAL_QUERY = """
SELECT t.id, b.slug, b.version, u.slug, p.slug, t.round, t.seq, t.attempt, t.replaces_id,
       t.batch, t.outcome, t.owner, t.cause, t.job_host, t.started_at, t.ended_at, t.in_flight,
       t.placement, t.host_load, t.cost_usd, t.cut_short, ({measurements}) AS measurements
FROM boxbench_trial t
JOIN boxbench_benchmark b ON b.id = t.benchmark_id
JOIN boxbench_unit u ON u.id = t.unit_id
JOIN boxbench_provider p ON p.id = t.provider_id
WHERE t.run_id = %s AND t.state = 'done' AND t.seq IS NOT NULL
ORDER BY t.seq
"""

# Each trial's measurements as one JSON array, sorted, so one streaming query serves the export.
MEASUREMENTS_SQL = {
    "postgresql": (
        "SELECT json_agg(json_build_array(m.kind, m.name, m.value, m.clock_gate)"
        " ORDER BY m.kind, m.name)::text FROM boxbench_measurement m WHERE m.trial_id = t.id"
    ),
    "sqlite": (
        "SELECT json_group_array(json_array(m.kind, m.name, m.value, m.clock_gate)) FROM"
        " (SELECT * FROM boxbench_measurement WHERE trial_id = t.id ORDER BY kind, name) m"
    ),
}


def _trial_rows(run: Run) -> Iterator[tuple]:
    """Finished trials in execution order from one streaming query (a server-side cursor on
    PostgreSQL), so memory stays flat however many trials the run has."""
    sql = TRIAL_QUERY.format(measurements=MEASUREMENTS_SQL[connection.vendor])
    run_id = run.id if connection.vendor == "postgresql" else run.id.hex
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.execute(sql, [run_id])
        while rows := cursor.fetchmany(PAGE_SIZE):
            yield from rows


def iter_trials(run: Run) -> Iterator[dict]:
    """Trial records of a run in the raw-data format, streamed with constant memory."""
    for row in _trial_rows(run):
        yield _trial_record(row)


def _uuid_text(value) -> str | None:
    if value is None:
        return None
    return str(value) if isinstance(value, uuid.UUID) else str(uuid.UUID(value))


def _json_value(value):
    return orjson.loads(value) if isinstance(value, str) else value


def _moment(value) -> str | None:
    if isinstance(value, str):  # SQLite without declared-type conversion
        value = datetime.fromisoformat(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return _iso(value)


def _trial_record(row: tuple) -> dict:
    (trial_id, benchmark, version, unit, provider, round_, seq, attempt, replaces, batch,
     outcome, owner, cause, job_host, started_at, ended_at, in_flight, placement, host_load,
     cost, cut_short, measurements) = row  # fmt: skip
    metrics, stages, gates = {}, {}, {}
    for kind, name, value, gate in _json_value(measurements) or ():
        group = "metrics" if kind == MeasurementKind.METRIC else "stages"
        (metrics if group == "metrics" else stages)[name] = value
        if gate:
            gates.setdefault(group, {})[name] = gate
    record = {
        "type": "trial",
        "benchmark": benchmark,
        "benchmark_version": version,
        "unit": unit,
        "provider": provider,
        "trial": _uuid_text(trial_id),
        "round": round_,
        "seq": seq,
        "attempt": attempt,
        "replaces": _uuid_text(replaces),
        "batch": batch,
        "outcome": outcome,
        "owner": owner,
        "cause": cause,
        "job_host": job_host,
        "started_at": _moment(started_at),
        "ended_at": _moment(ended_at),
        "in_flight": in_flight,
        "placement": _json_value(placement),
        "host_load": _json_value(host_load),
        "metrics": metrics,
        "stages": stages,
        "cost_usd": cost,
    }
    if gates:
        record["clock_gates"] = gates
    if cut_short:  # optional: files without a cut-short trial keep their bytes
        record["cut_short"] = True
    return record


def export_jsonl(run: Run) -> Iterator[str]:
    """Lines of the JSON Lines export, each ending in a newline."""
    yield _dumps(run_header(run)) + "\n"
    for record in iter_trials(run):
        yield _dumps(record) + "\n"


def csv_row(run: Run, record: dict) -> list:
    def blank(value):
        return "" if value is None else value

    return [
        str(run.id), record["benchmark"], record["unit"], record["provider"], record["trial"],
        record["round"], record["seq"], record["attempt"], blank(record["replaces"]),
        record["batch"], record["outcome"], record["owner"], record["cause"],
        record["job_host"], blank(record["started_at"]), blank(record["ended_at"]),
        blank(record["in_flight"]), blank(record["cost_usd"]), _dumps(record["placement"]),
        _dumps(record["host_load"]), _dumps(record["metrics"]), _dumps(record["stages"]),
    ]  # fmt: skip


def export_csv(run: Run) -> Iterator[str]:
    """The flat CSV form of a run's trials, through defusedcsv (no spreadsheet formulas)."""
    from defusedcsv import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in iter_trials(run):
        writer.writerow(csv_row(run, record))
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
