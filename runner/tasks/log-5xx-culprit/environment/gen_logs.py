"""Writes the task's logs, deterministic for a seed: the culprit has the most 5xx answers."""

import gzip
import random
import sys
from pathlib import Path

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
out = Path("/app/logs")
out.mkdir(parents=True, exist_ok=True)
clients = [
    f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(60)
]
culprit = clients[17]
paths = ["/", "/login", "/api/items", "/api/cart", "/static/app.js", "/health"]
for part in range(4):
    lines = []
    for i in range(6000):
        ip = rng.choice(clients)
        status = rng.choice([200] * 30 + [301, 404, 500, 502, 503])
        if ip == culprit and rng.random() < 0.3:
            status = rng.choice([500, 502, 503, 504])
        lines.append(
            f"{ip} - - [07/Dec/2026:{part:02d}:{i // 100 % 60:02d}:{i % 60:02d} +0000] "
            f'"GET {rng.choice(paths)} HTTP/1.1" {status} {rng.randint(100, 9000)} "-" "curl/8"\n'
        )
    text = "".join(lines)
    if part == 0:
        (out / "access.log").write_text(text)
    else:
        with gzip.open(out / f"access.log.{part}.gz", "wt") as f:
            f.write(text)
