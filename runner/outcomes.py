"""The runner's vocabulary: every closed set of words a trial or a chain stores, one enum each,
in one place. Pure (no Django): boxbench's models take their columns' choices from here, the
runner, the store and the raw-data format compare with the members, never with the words.

- Outcome: a trial's outcome (common methodology, "Outcomes").
- Owner: whose the outcome is (methodology, "Ownership"; "" for a success).
- EvidenceKind: what a private Evidence row of a trial records.
- ChainState: where a provider's chain of a run stands (ChainProgress, runner/steps.py).
- Section, Direction, Clock: where a benchmark is shown, which way is better, what timed it
  (BenchmarkDefinition, the store's Benchmark and MeasurementName).
- MeasurementKind, ClockGate: a measurement's kind, and whether the guest clock agreed with the
  job host's (Trial.measurements).

Each is a StrEnum, so a member is stored, compared and serialized as its word: stored values do
not change. A trial cut short (a step overran its limit, or its worker was lost) is a provider
failure whose outcome is really unknown: that is the Trial's `cut_short` flag, not another
outcome. tests/runner/test_vocabulary.py fails on a word of these sets (but for chain states and
request outcomes) written as a string literal where its name goes, anywhere in the source.
"""

from __future__ import annotations

from enum import StrEnum

# The largest measurement value (and trial cost, and in-flight count) that is stored and read
# back: about 31 years in milliseconds, or 10^12 MB/s. Every statistic of values this size stays
# far from the float limit (a sum of a billion of them is 10^21); docs/raw-data.md.
MAX_VALUE = 1e12


class Words(StrEnum):
    """A closed set of stored words; each member's label is its word, spaced and capitalized."""

    @property
    def label(self) -> str:
        return self.value.replace("_", " ").capitalize()

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        """(value, label) pairs for a Django field's `choices`."""
        return [(word.value, word.label) for word in cls]

    @classmethod
    def values(cls) -> list[str]:
        return [word.value for word in cls]


class Outcome(Words):
    SUCCESS = "success"
    PROVIDER_FAILURE = "provider_failure"
    BENCHMARK_ERROR = "benchmark_error"
    EXCLUDED = "excluded"
    MISSED = "missed"


class Owner(Words):
    NONE = ""  # a success
    PROVIDER = "provider"
    BENCHMARK = "benchmark"  # ours: the script, the adapter binding or the core
    TRACE = "trace"  # a deterministic trace diverged: it does not replay here
    ENVIRONMENT = "environment"  # a pre-test environment check, or the job host itself
    UNKNOWN = "unknown"

    @property
    def label(self) -> str:
        return OWNER_LABELS[self]


OWNER_LABELS = {
    Owner.NONE: "None",
    Owner.PROVIDER: "Provider",
    Owner.BENCHMARK: "Benchmark",
    Owner.TRACE: "Trace (does not replay here)",
    Owner.ENVIRONMENT: "Environment check",
    Owner.UNKNOWN: "Unknown",
}


class EvidenceKind(Words):
    """What one Evidence row of a trial holds (private: never published)."""

    LIFECYCLE = "lifecycle"  # the trial's sandboxes, their hold spans and the cleanup check
    SANDBOX = "sandbox"  # a created sandbox: its id, create time and the provider's facts
    CREATE_ERROR = "create_error"  # a create that failed (its code; a backend unreachable)
    READINESS = "readiness"  # every attempt of the readiness check
    CLOCK_GATE = "clock_gate"  # the guest clock against the job host's
    KILLED_BY_SIGNAL = "killed_by_signal"  # a command killed by a signal, and why
    TRACEBACK = "traceback"  # a failure inside our own code
    BILLED_COST = "billed_cost"  # what a failed trial cost
    CLEANUP = "cleanup"  # a sandbox whose destroy failed or overran, or creates still in flight
    SNAPSHOT = "snapshot"  # a snapshot taken: its id, its source sandbox and its time
    TASK_IMAGE = "task_image"  # a task's image built by the provider: its identifier and build
    RECOVERY = "recovery"  # recovery ended the trial (its worker was lost)
    REPLAY = "replay"  # a DeepSWE replay's summary
    REPLAY_OUTPUT_TAIL = "replay_output_tail"  # the end of a failed replay's output
    ISOLATION_PROBE = "isolation_probe"  # one isolation probe's raw answer, and what it lacked


class RequestOutcome(Words):
    """What became of one request of a burst (runner/benchmarks/burst.py; docs/raw-data.md)."""

    OK = "ok"
    RATE_LIMITED = "rate_limited"  # a 429 or quota answer: the account's limit, counted apart
    PROVIDER_ERROR = "provider_error"
    TIMEOUT = "timeout"
    STUCK = "stuck"  # never became ready, or could not be deleted


class ChainState(Words):
    """Where a provider's chain stands: waiting for its lane's turn, queued, running a step,
    or done (runner/steps.py)."""

    WAITING = "waiting"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class Section(Words):
    WORKLOAD = "workload"
    SANDBOX_OPERATIONS = "sandbox_operations"
    MACHINE_PERFORMANCE = "machine_performance"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ").title()


class Direction(Words):
    LOWER = "lower"
    HIGHER = "higher"

    @property
    def label(self) -> str:
        return f"{self.value.capitalize()} is better"


class Clock(Words):
    JOB_HOST = "job_host"
    GUEST = "guest"

    @property
    def label(self) -> str:
        return {"job_host": "Job-host clock", "guest": "Sandbox clock"}[self.value]


class MeasurementKind(Words):
    METRIC = "metric"  # the benchmark's main measurement, or another it reports
    STAGE = "stage"  # the time of one stage of a workload


class ClockGate(Words):
    NOT_APPLICABLE = ""  # not timed by the guest clock
    PASS = "pass"
    FAIL = "fail"  # a stepped clock

    @property
    def label(self) -> str:
        return CLOCK_GATE_LABELS[self]


CLOCK_GATE_LABELS = {
    ClockGate.NOT_APPLICABLE: "Not guest-timed",
    ClockGate.PASS: "Clocks agree",
    ClockGate.FAIL: "Stepped clock",
}
