"""The public raw-data format: JSON Lines (and a flat CSV of the trials). See docs/raw-data.md.

Export streams a run with constant memory: trials are read in keyset-paginated pages and their
measurements fetched per page. Import reads a file back in one transaction: any malformed line
stops it with the file, line number and field named, and nothing of that file is written.
Export, import, export gives byte-identical output.
"""

from boxbench.rawdata.export import csv_row, export_csv, export_jsonl, iter_trials, run_header
from boxbench.rawdata.importer import ImportResult, import_jsonl
from boxbench.rawdata.schema import SCHEMA_VERSION, RawDataError

__all__ = [
    "SCHEMA_VERSION",
    "ImportResult",
    "RawDataError",
    "csv_row",
    "export_csv",
    "export_jsonl",
    "import_jsonl",
    "iter_trials",
    "run_header",
]
