"""Hard links: a timed loop creating N hard links to one file in /app, in ms (lower is better).

The loop runs in python3 inside the sandbox so the span holds the link() calls, not N process
starts; the script reads $EPOCHREALTIME's equivalent (time.time) and /proc/uptime around the loop
itself and the clock gate is applied to those two spans.
"""

from runner import clock
from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import BenchmarkError, ProviderFailure, TrialContext
from runner.outcomes import Clock, ClockGate, Direction

LINKS = 20_000
FREE_MIB = 64

DEFINITION = mc.machine_definition(
    "hard-links",
    "Hard links",
    f"Create {LINKS} hard links to one file in /app in a loop: milliseconds.",
    metric="hard_links_ms",
    unit="ms",
    direction=Direction.LOWER,
)

LOOP = """
import os, time
def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])
os.makedirs("links", exist_ok=True)
open("links/target", "w").close()
u0 = uptime(); w0 = time.time()
for i in range({links}):
    os.link("links/target", "links/l%d" % i)
w1 = time.time(); u1 = uptime()
print("%.6f %.6f %.2f %.2f" % (w0, w1, u0, u1))
"""


units = mc.one_unit(f"links-{LINKS}", f"{LINKS} hard links", {"links": LINKS})


def run(ctx: TrialContext) -> None:
    mc.require_free_space(ctx, FREE_MIB)
    script = LOOP.format(links=LINKS)
    # The loop gates its own span below; the script's whole span also holds the Python start
    # and the removal, which are not measured, so a step there fails nothing.
    out = mc.run_tool(
        ctx, f"python3 -c '{script}' && rm -rf links", 300, "hard-link loop", check_gate=False
    )
    wall_ms, uptime_ms = parse_loop(out)
    if not clock.gate(wall_ms, uptime_ms):
        raise ProviderFailure(
            f"stepped clock in the hard-link loop: {wall_ms:.1f} ms by the wall clock, "
            f"{uptime_ms:.1f} ms by /proc/uptime"
        )
    ctx.record("hard_links_ms", wall_ms, clock=Clock.GUEST, gate=ClockGate.PASS)


def parse_loop(text: str) -> tuple[float, float]:
    try:
        w0, w1, u0, u1 = (float(v) for v in text.split())
    except ValueError:
        raise BenchmarkError(f"the hard-link loop printed {text[-200:]!r}") from None
    return (w1 - w0) * 1000, (u1 - u0) * 1000
