import csv, glob, json, sys
from decimal import Decimal

expected, skipped = {}, 0
for name in glob.glob("/app/data/sales-*.csv"):
    for row in csv.DictReader(open(name, newline="")):
        try:
            units = int(row["units"])
        except ValueError:
            skipped += 1
            continue
        e = expected.setdefault(row["region"], [0, Decimal(0)])
        e[0] += units
        e[1] += units * Decimal(row["unit_price"])
got = json.load(open("/app/summary.json"))
assert got.pop("skipped") == skipped, "skipped count"
assert set(got) == set(expected), "regions"
for region, (units, revenue) in expected.items():
    assert got[region]["units"] == units, region
    assert abs(Decimal(str(got[region]["revenue"])) - revenue) <= Decimal("0.01"), region
print("summary ok")
