"""The flat CSV of a run's trials: one row per trial record of the raw-data export, its nested
fields as canonical JSON, written through boxbench.safecsv (no spreadsheet formulas)."""

import io
from collections.abc import Iterator

from boxbench import safecsv
from boxbench.models import Run
from boxbench.rawdata.exporter import CHUNK_BYTES, ENCODER, TrialRecord, iter_trials
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
    "metrics",
    "stages",
)


def _dumps(value) -> str:
    return ENCODER.encode(value).decode()


def csv_row(run_id: str, record: TrialRecord) -> list:
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
        _dumps(record.metrics),
        _dumps(record.stages),
    ]


def export_csv(run: Run, form: str = PUBLIC) -> Iterator[str]:
    """The flat CSV of a run's trials (of `form`: the public one holds the successful trials
    only), through boxbench.safecsv (no spreadsheet formulas)."""
    buffer = io.StringIO()
    writer = safecsv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    run_id = str(run.id)
    for record in iter_trials(run, form=form):
        writer.writerow(csv_row(run_id, record))
        if buffer.tell() > CHUNK_BYTES:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
