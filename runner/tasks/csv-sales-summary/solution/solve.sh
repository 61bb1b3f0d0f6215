#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv, glob, json
totals, skipped = {}, 0
for name in sorted(glob.glob("/app/data/sales-*.csv")):
    with open(name, newline="") as f:
        for row in csv.DictReader(f):
            if not row["units"].isdigit():
                skipped += 1
                continue
            region = totals.setdefault(row["region"], {"units": 0, "revenue": 0.0})
            region["units"] += int(row["units"])
            region["revenue"] += int(row["units"]) * float(row["unit_price"])
for region in totals.values():
    region["revenue"] = round(region["revenue"], 2)
totals["skipped"] = skipped
with open("/app/summary.json", "w") as out:
    json.dump(totals, out, indent=2, sort_keys=True)
PY
