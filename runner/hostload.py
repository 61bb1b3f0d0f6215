"""Job-host CPU and memory load over a trial's window, for the audit's host-saturated check.

A sampler thread reads system CPU times and available memory every `interval_s`; at the end it
reports the peak and mean CPU busy share (0-1 of all CPUs), the least available memory, the
highest memory pressure (`some avg10` from /proc/pressure/memory, where present) and whether the
runner's own cgroup was CPU-throttled during the window.
"""

from __future__ import annotations

import threading
from pathlib import Path

import psutil

PRESSURE_MEMORY = Path("/proc/pressure/memory")


class HostLoadSampler:
    def __init__(self, interval_s: float = 0.25):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak = 0.0
        self._mem_min_kib: int | None = None
        self._pressure_max: float | None = None

    def start(self) -> None:
        self._first = self._last = psutil.cpu_times()
        self._throttled_before = cpu_throttled_count()
        self._sample_memory()
        self._thread = threading.Thread(target=self._loop, name="host-load", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now = psutil.cpu_times()
        self._peak = max(self._peak, _busy_share(self._last, now))
        self._last = now
        self._sample_memory()

    def _sample_memory(self) -> None:
        available = psutil.virtual_memory().available // 1024
        self._mem_min_kib = (
            available if self._mem_min_kib is None else min(self._mem_min_kib, available)
        )
        pressure = memory_pressure_avg10()
        if pressure is not None:
            self._pressure_max = max(self._pressure_max or 0.0, pressure)

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        throttled_after = cpu_throttled_count()
        throttled = None
        if self._throttled_before is not None and throttled_after is not None:
            throttled = throttled_after > self._throttled_before
        return {
            "cpu_peak": round(self._peak, 4),
            "cpu_mean": round(_busy_share(self._first, self._last), 4),
            "host_cpu_count": psutil.cpu_count(),
            # Named as stats.audit.COLUMNS expects: the least available memory and the highest
            # pressure seen over the window.
            "mem_available_kib": self._mem_min_kib,
            "mem_pressure_some_avg10": self._pressure_max,
            "cpu_throttled": throttled,
        }


def _busy_share(before, after) -> float:
    """Share of all CPUs busy between two psutil.cpu_times() readings."""
    total = sum(after) - sum(before)
    if total <= 0:
        return 0.0
    idle = (after.idle - before.idle) + (getattr(after, "iowait", 0) - getattr(before, "iowait", 0))
    return max(0.0, min(1.0, 1.0 - idle / total))


def memory_pressure_avg10() -> float | None:
    try:
        line = PRESSURE_MEMORY.read_text().splitlines()[0]  # "some avg10=0.00 avg60=..."
    except (OSError, IndexError):
        return None
    for field in line.split()[1:]:
        key, _, value = field.partition("=")
        if key == "avg10":
            return float(value)
    return None


def cpu_throttled_count() -> int | None:
    """nr_throttled of the runner's own CPU cgroup (v2 or v1), or None where it cannot be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidates.append(Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.stat")
        elif "cpu" in controllers.split(","):
            candidates.append(Path("/sys/fs/cgroup/cpu") / path.lstrip("/") / "cpu.stat")
    for stat_file in candidates:
        try:
            for stat in stat_file.read_text().splitlines():
                key, _, value = stat.partition(" ")
                if key == "nr_throttled":
                    return int(value)
        except OSError:
            continue
    return None
