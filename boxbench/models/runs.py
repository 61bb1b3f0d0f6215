"""Runs, their status changes as rows (checked against RUN_TRANSITIONS), the chains that carry
them out, and how failing audit pairs were resolved."""

import uuid

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from boxbench.choices import RUN_TRANSITIONS, ResolutionKind, RunStatus
from boxbench.models.catalog import Benchmark, Provider
from boxbench.permissions import RUN_PERMISSIONS
from runner.labels import run_digits
from runner.manifest import Manifest
from runner.outcomes import ChainState


class InvalidTransition(Exception):
    pass


class FinalResolution(Exception):
    """A published run's audit resolution was to be changed or deleted: it is final."""


class RunQuerySet(models.QuerySet):
    def published(self):
        return self.filter(published=True)

    def sharing_labels_with(self, run_id) -> "Run | None":
        """Another run whose sandbox labels a run with this id would carry too, or None."""
        return self.filter(label_prefix=run_digits(run_id)).exclude(pk=run_id).first()


class Run(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PLANNED)
    manifest = models.JSONField(default=dict, blank=True)
    # Only boxbench's own audit of the stored trials (boxbench.publishing.run_audit) is written
    # here; a report carried by an imported file is kept apart, for comparison only.
    audit_report = models.JSONField(null=True, blank=True)
    imported_audit_report = models.JSONField(null=True, blank=True)
    audited_at = models.DateTimeField(null=True, blank=True)
    published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The id's digits that every sandbox label of the run carries (runner/labels.py). Unique, so
    # a run planned on another host, or imported with an id chosen to match, is refused rather
    # than sharing labels (cleanup would then take the other run's sandboxes for its own).
    # Empty (null) only on a run that already shared its digits when the column was added.
    label_prefix = models.CharField(max_length=12, unique=True, null=True, editable=False)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = RUN_PERMISSIONS
        constraints = [
            models.CheckConstraint(
                condition=models.Q(published=False) | models.Q(published_at__isnull=False),
                name="run_published_has_time",
            ),
        ]
        indexes = [
            # The dashboard's "latest published runs" query.
            models.Index(
                fields=["-published_at"],
                name="run_published_idx",
                condition=models.Q(published=True),
            ),
        ]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if self._state.adding and self.label_prefix is None:
            self.label_prefix = run_digits(self.id)
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        # The admin's "View on site": the run's page, where its control room is.
        from django.urls import reverse

        return reverse("run", args=[self.id])

    @property
    def typed_manifest(self) -> Manifest:
        """The manifest as a type; runner.manifest.ManifestError when the stored JSON is bad."""
        return Manifest.from_json(self.manifest, where=f"the manifest of run {self.id}")

    def transition(self, to_status: str, note: str = "", actor=None):
        """Move to `to_status` if RUN_TRANSITIONS allows it, recording the change as a row.

        The UPDATE is conditional on the status we read, so two processes cannot both move the
        run out of the same state.
        """
        to_status = RunStatus(to_status)
        from_status = RunStatus(self.status)
        if to_status not in RUN_TRANSITIONS[from_status]:
            raise InvalidTransition(f"run {self.id}: {from_status} -> {to_status} is not allowed")
        now = timezone.now()
        fields = {"status": to_status}
        if to_status == RunStatus.RUNNING:
            fields["started_at"] = now
        if to_status in (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED):
            fields["ended_at"] = now
        with transaction.atomic():
            changed = Run.objects.filter(pk=self.pk, status=from_status).update(**fields)
            if changed != 1:
                raise InvalidTransition(f"run {self.id} is no longer {from_status}")
            RunTransition.objects.create(
                run=self, from_status=from_status, to_status=to_status, note=note, actor=actor
            )
        for key, value in fields.items():
            setattr(self, key, value)


class ChainProgress(models.Model):
    """Where one provider's chain of a run stands, so that a chain whose worker was lost resumes
    from there (runner/steps.py): each step (the start, one batch, one top-up round's batch) is
    one queue task, claimed by a conditional UPDATE on (step, state)."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="chain_progress", db_index=False)
    provider = models.CharField(max_length=100)
    job_host = models.CharField(max_length=100)
    # Providers whose sandboxes share one job host take turns step by step (never at once).
    lane = models.CharField(max_length=100, blank=True)
    # Each state reads as its own word (the choices' labels are the words).
    state = models.CharField(
        max_length=10, choices=[(s.value, s.value) for s in ChainState], default=ChainState.QUEUED
    )
    step = models.PositiveIntegerField(default=0, help_text="The next step to run.")
    # Top-up rounds and what the chain must remember between steps (JSON, runner/steps.py).
    memory = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    resumed = models.PositiveIntegerField(default=0, help_text="Times recovery resumed it.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "provider"], name="chainprogress_run_provider")
        ]
        indexes = [
            # Recovery: chains not done, by heartbeat (a lost step) or enqueue time.
            models.Index(
                fields=["state", "heartbeat_at"],
                name="chainprogress_live_idx",
                condition=~models.Q(state=ChainState.DONE),
            )
        ]

    def __str__(self):
        return f"{self.run_id} {self.provider} step {self.step} {self.state}"


class RunTransition(models.Model):
    run = models.ForeignKey(Run, models.CASCADE, related_name="transitions")
    from_status = models.CharField(max_length=20, choices=RunStatus.choices)
    to_status = models.CharField(max_length=20, choices=RunStatus.choices)
    at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["at", "id"]

    def __str__(self):
        return f"{self.from_status} → {self.to_status}" + (f": {self.note}" if self.note else "")


class AuditResolution(models.Model):
    """How a failing audit pair was resolved before publication."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="resolutions")
    provider = models.ForeignKey(Provider, models.CASCADE, related_name="+")
    benchmark = models.ForeignKey(Benchmark, models.CASCADE, related_name="+")
    check_name = models.CharField(max_length=40)
    kind = models.CharField(max_length=30, choices=ResolutionKind.choices)
    note = models.TextField()
    rerun = models.ForeignKey(Run, models.SET_NULL, null=True, blank=True, related_name="+")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "provider", "benchmark", "check_name"],
                name="resolution_pair_check_uniq",
            ),
        ]

    def save(self, *args, **kwargs):
        # The stored row is asked, not this object: a change is refused wherever it comes from
        # (the admin, a form, the shell).
        if self.is_final():
            raise FinalResolution(_final_message(self))
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.is_final():
            raise FinalResolution(_final_message(self))
        return super().delete(*args, **kwargs)

    def is_final(self) -> bool:
        """Whether this recorded resolution belongs to a published run, and so is final: its
        board was published with it (or waits for a republication that will publish it), so a
        change would alter the board at the next materialization with no publication."""
        return self.pk is not None and Run.objects.filter(pk=self.run_id, published=True).exists()


def _final_message(resolution: AuditResolution) -> str:
    return (
        f"run {resolution.run_id} is published: its resolution of {resolution.check_name} is "
        "final; to change the board, measure the pair in a new run and publish that"
    )
