"""The one CSV writer for every file a user downloads: spreadsheet formulas defused.

defusedcsv prefixes a quote to cells that start with `=`, `+`, `-`, `@`, `|` or `%`; spreadsheet
programs also read a cell that starts with a tab or a carriage return as a formula once they
strip it (OWASP's CSV injection list), so those get the same quote here. No Django: tested
directly.
"""

from __future__ import annotations

from defusedcsv import csv

# Characters a spreadsheet skips before it looks for a formula, which defusedcsv lets through.
_LEADING = ("\t", "\r")


class _Writer:
    def __init__(self, inner):
        self._inner = inner

    def writerow(self, row):
        return self._inner.writerow([_defuse(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(buffer, **options) -> _Writer:
    return _Writer(csv.writer(buffer, **options))


def _defuse(cell):
    if isinstance(cell, str) and cell.startswith(_LEADING):
        return "'" + cell
    return cell
