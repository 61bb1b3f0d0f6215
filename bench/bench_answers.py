"""What reading a provider's answers through the shared bounded reader costs, beside a plain read.

    python bench/bench_answers.py [--calls 500] [--mib 8]

A loopback server (runner/providers/fakes/server.py) answers a small JSON document (a create
answer) and an `--mib` MiB file (the file-transfer benchmark moves 8 MiB). Each is fetched
alternately, call by call, through `client.request` (the whole body read, no cap) and through
runner/providers/http.py's `send` (streamed, counted against its cap, the answer rebuilt), on one
keep-alive client, which goes first alternating, so both columns see the same moments of machine
load. The JSON answer is then
decoded with msgspec into a typed struct (Reader.json) beside `json.loads`.

Then the bound itself: an endless body is fetched through `send` with a 16 MiB cap, and the
process's peak resident memory is printed before and after (it grows by about the cap, not the
body). Prints lower medians and nearest-rank p95 in microseconds and the median of the paired
differences. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec

from runner.providers.answers import MIB, Reader
from runner.providers.base import ProviderError
from runner.providers.fakes.hostile import CHUNK
from runner.providers.fakes.server import FakeHTTPServer, Response
from runner.providers.http import make_client, send

CREATED = {
    "sandboxID": "i" * 20,
    "templateID": "boxbench-standard",
    "envdVersion": "0.2.0",
    "envdAccessToken": "t" * 40,
    "clientID": "c" * 8,
    "alias": "boxbench",
}
READER = Reader("bench", "read")


class Created(msgspec.Struct):
    sandboxID: str  # noqa: N815 - the provider's own key
    templateID: str = ""  # noqa: N815
    envdVersion: str = ""  # noqa: N815


def endless():
    chunk = b"\0" * CHUNK
    while True:
        yield chunk


def lower_median(values: list[float]) -> float:
    return statistics.median_low(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def timed(fn) -> float:
    started = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - started) / 1000


def compare(label: str, plain, bounded, calls: int) -> None:
    plain_us, bounded_us = [], []
    for call in range(calls):
        # Which goes first alternates: the second of a pair meets the server's leftovers.
        if call % 2:
            bounded_us.append(timed(bounded))
            plain_us.append(timed(plain))
        else:
            plain_us.append(timed(plain))
            bounded_us.append(timed(bounded))
    added = [b - p for p, b in zip(plain_us, bounded_us, strict=True)]
    print(
        f"{label:<28} plain {lower_median(plain_us):9.1f} us (p95 {p95(plain_us):9.1f})   "
        f"bounded {lower_median(bounded_us):9.1f} us (p95 {p95(bounded_us):9.1f})   "
        f"added {statistics.median_low(added):+8.1f} us"
    )


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--mib", type=int, default=8)
    args = parser.parse_args()
    blob = bytes(range(256)) * (args.mib * MIB // 256)
    body = json.dumps(CREATED).encode()
    routes = {
        "/created": lambda: Response(200, body, {"Content-Type": "application/json"}),
        "/file": lambda: Response(200, blob, {"Content-Type": "application/octet-stream"}),
        "/endless": lambda: Response(200, endless()),
    }
    server = FakeHTTPServer(lambda request: routes[request.path](), 30, "bench-answers")
    server.start()
    try:
        with make_client() as client:
            created, file = server.url + "/created", server.url + "/file"
            compare(
                "JSON answer, read",
                lambda: client.request("GET", created).content,
                lambda: send(client, "GET", created, READER, 16 * MIB).content,
                args.calls,
            )
            compare(
                "JSON answer, decoded",
                lambda: json.loads(body)["sandboxID"],
                lambda: READER.json(body, Created).sandboxID,
                args.calls,
            )
            compare(
                f"{args.mib} MiB download",
                lambda: client.request("GET", file).content,
                lambda: send(client, "GET", file, READER, 256 * MIB).content,
                max(10, args.calls // 20),
            )
            before = peak_rss_mib()
            started = time.monotonic()
            try:
                send(client, "GET", server.url + "/endless", READER, 16 * MIB, "an endless body")
            except ProviderError as exc:
                refused = f"{exc.code} after {time.monotonic() - started:.2f} s"
            print(
                f"endless body, 16 MiB cap: {refused}; peak RSS {before:.0f} MiB before, "
                f"{peak_rss_mib():.0f} MiB after"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
