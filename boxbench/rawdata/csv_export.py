"""The flat CSV of a run's trials: one row per trial record of the raw-data export, each
measurement a column of its own, written through boxbench.safecsv (no spreadsheet formulas).

A measurement's column is named by its kind, name and unit (`metric.total (ms)`,
`stage.replay (ms)`): one benchmark's `total` in ms and another's in events/s never share a
column. The columns are those the run stored (MeasurementName), known before the trials stream;
a trial leaves the columns of other benchmarks blank. Placement and host load stay JSON cells:
their keys vary by provider and are not measurements. Since raw-data version 5
(docs/raw-data.md); version 4's CSV held the measurements as JSON cells.
"""

import io
from collections.abc import Iterator

from boxbench import safecsv
from boxbench.models import MeasurementName, Run
from boxbench.rawdata.exporter import CHUNK_BYTES, ENCODER, METRIC, TrialRecord, iter_trials
from boxbench.rawdata.schema import PUBLIC

CSV_COLUMNS = (
    "run",
    "benchmark",
    "unit",
    "provider",
    "trial",
    "round",
    "seq",
    "attempt",
    "replaces",
    "batch",
    "outcome",
    "owner",
    "cause",
    "job_host",
    "started_at",
    "ended_at",
    "in_flight",
    "cost_usd",
    "placement",
    "host_load",
)
KINDS = {"metrics": "metric", "stages": "stage"}


def measurement_column(group: str, name: str, unit: str) -> str:
    return f"{KINDS[group]}.{name} ({unit})"


class MeasurementColumns:
    """The run's measurement columns, in a stable order (metrics, then stages, by name and
    unit), and where each benchmark's names go."""

    def __init__(self, run: Run):
        stored = MeasurementName.objects.filter(run=run).values_list(
            "benchmark__slug", "benchmark__version", "kind", "name", "unit"
        )
        self.where: dict[tuple[str, str, str, str], int] = {}
        found = sorted(
            {
                ("metrics" if kind == METRIC else "stages", name, unit)
                for *_, kind, name, unit in stored
            }
        )
        self.names = [measurement_column(*column) for column in found]
        index = {column: i for i, column in enumerate(found)}
        for slug, version, kind, name, unit in stored:
            group = "metrics" if kind == METRIC else "stages"
            self.where[(slug, version, group, name)] = index[(group, name, unit)]

    def cells(self, record: TrialRecord) -> list:
        row: list = [""] * len(self.names)
        for group in KINDS:
            for name, value in getattr(record, group).items():
                at = self.where.get((record.benchmark, record.benchmark_version, group, name))
                if at is None:  # the exporter refuses undeclared names; never silently dropped
                    raise ValueError(
                        f"{group} {name!r} of benchmark {record.benchmark} has no unit"
                    )
                row[at] = "" if value is None else value
        return row


def _dumps(value) -> str:
    return ENCODER.encode(value).decode()


def csv_row(run_id: str, record: TrialRecord, columns: MeasurementColumns) -> list:
    def blank(value):
        return "" if value is None else value

    return [
        run_id,
        record.benchmark,
        record.unit,
        record.provider,
        record.trial,
        record.round,
        record.seq,
        record.attempt,
        blank(record.replaces),
        record.batch,
        record.outcome,
        record.owner,
        record.cause,
        record.job_host,
        blank(record.started_at),
        blank(record.ended_at),
        blank(record.in_flight),
        blank(record.cost_usd),
        _dumps(record.placement),
        _dumps(record.host_load),
        *columns.cells(record),
    ]


def export_csv(run: Run, form: str = PUBLIC) -> Iterator[str]:
    """The flat CSV of a run's trials (of `form`: the public one holds the successful trials
    only), through boxbench.safecsv (no spreadsheet formulas)."""
    buffer = io.StringIO()
    writer = safecsv.writer(buffer, lineterminator="\n")
    columns = MeasurementColumns(run)
    writer.writerow([*CSV_COLUMNS, *columns.names])
    run_id = str(run.id)
    for record in iter_trials(run, form=form):
        writer.writerow(csv_row(run_id, record, columns))
        if buffer.tell() > CHUNK_BYTES:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
