import collections, gzip, pathlib

counts = collections.Counter()
logs = pathlib.Path("/app/logs")
for path in logs.iterdir():
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        for line in f:
            fields = line.split()
            if fields[8].startswith("5"):
                counts[fields[0]] += 1
((ip, count),) = counts.most_common(1)
assert pathlib.Path("/app/answer.txt").read_text().strip() == ip, "address"
assert int(pathlib.Path("/app/count.txt").read_text()) == count, "count"
print("culprit ok")
