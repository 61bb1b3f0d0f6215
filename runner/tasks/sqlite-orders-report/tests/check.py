import collections, csv, sqlite3
from decimal import Decimal

country = {r["id"]: r["country"] for r in csv.DictReader(open("/app/customers.csv"))}
totals, buyers = collections.defaultdict(Decimal), collections.defaultdict(set)
for r in csv.DictReader(open("/app/orders.csv")):
    c = country[r["customer_id"]]
    totals[c] += Decimal(r["amount"])
    buyers[c].add(r["customer_id"])
rows = list(csv.reader(open("/app/report.csv")))
assert rows[0] == ["country", "customers", "total"], "header"
expected = sorted(totals, key=lambda c: -totals[c])
assert [r[0] for r in rows[1:]] == expected, "order"
for c, n, total in rows[1:]:
    assert int(n) == len(buyers[c]) and abs(Decimal(total) - totals[c]) <= Decimal("0.01"), c
db = sqlite3.connect("file:/app/shop.db?mode=ro", uri=True)
assert db.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 5000, "orders table"
assert db.execute("SELECT COUNT(*) FROM customers").fetchone()[0] == 300, "customers table"
print("report ok")
