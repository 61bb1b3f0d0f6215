"""The public raw-data format: JSON Lines (and a flat CSV of the trials). See docs/raw-data.md.

schema.py   the typed format (msgspec), which also documents it (docs.py renders the tables)
checks.py   checks across fields and lines: times, references, order, replacements, NUL
reader.py   numbered lines of a file, their length limit and the trailer's digest
importer.py `bench import`: all of a file or nothing, in one transaction
writers.py  bulk writes (COPY on PostgreSQL) that report a refused row at its file line
counts.py   the counts lines: unsuccessful attempts counted per benchmark, unit and provider;
            the reliability lines: attempts and failures per provider and operation
exporter.py `bench export`: two ordered cursors merged, canonical JSON, the trailer; the public
            form (successful trials, the others counted) or the full one (every trial)
prefetch.py the exporter's next page fetched in a thread while the last is encoded
csv_export.py the flat CSV of the export's trial records
"""

from boxbench.rawdata.csv_export import export_csv
from boxbench.rawdata.errors import RawDataError
from boxbench.rawdata.exporter import export_jsonl, iter_jsonl_bytes, iter_trials
from boxbench.rawdata.importer import ImportResult, import_jsonl
from boxbench.rawdata.schema import FULL, PUBLIC, SCHEMA_VERSION

__all__ = [
    "FULL",
    "PUBLIC",
    "SCHEMA_VERSION",
    "ImportResult",
    "RawDataError",
    "export_csv",
    "export_jsonl",
    "import_jsonl",
    "iter_jsonl_bytes",
    "iter_trials",
]
