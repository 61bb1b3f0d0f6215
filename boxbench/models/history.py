"""What a publication computes once of each published run and every later publication reads
back: the run's pairs with their history points, and its progress cells (docs/performance.md,
"Publication independent of history"). A run's trials never change once it is published, so
neither do these."""

from django.db import models

from boxbench.models.catalog import Benchmark, Provider
from boxbench.models.runs import Run


class PublishedPair(models.Model):
    """One (provider, benchmark) pair a published run holds: finished trials, or attempts
    known only as counts (an imported public file)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="+")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    # The latest end of a finished trial of the pair; None where its attempts are only counted.
    measured = models.DateTimeField(null=True)
    finished = models.BooleanField()  # holds finished trials: a point of the pair's series
    # [{unit, n, median, ci_low, ci_high}] where a trial succeeded; None until computed.
    points = models.JSONField(null=True)

    class Meta:
        constraints = [
            # Also serves the history's read: every pair of one benchmark over the published runs.
            models.UniqueConstraint(
                fields=["benchmark", "run", "provider"], name="publishedpair_uniq"
            ),
        ]
        indexes = [
            # Which runs are stored yet, and the sources' read of every published run's pairs.
            models.Index(fields=["run"], name="publishedpair_run_idx"),
        ]


class RunProgress(models.Model):
    """The progress cells (runner.runs.progress) of a published run, counted once."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="+")
    cells = models.JSONField()


class RunReliability(models.Model):
    """The attempts and failures of a published run per provider and operation
    (boxbench.leaderboard.reliability), counted once: only counts, never a cause."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="+")
    # {provider slug: {"operations": stats.reliability.tally, "unplaced": failures known only
    # as counts (an imported public file), which name no operation}}
    counts = models.JSONField()
