"""What each staff member sees in the admin, beyond Django's model permissions.

- Unpublished runs and everything recorded under them (trials, measurement names, evidence,
  resolutions) appear in lists, change pages, filters, search, raw-id lookups and form choices
  only with view_unpublished_run, as on the dashboard.
- Replacement links, owners, causes and costs of trials are private evidence: shown only with
  view_private_evidence (the unsuccessful trials themselves are left out by
  admin.successful_unless_private).
- Definitions (providers, benchmarks, units) never change once declared, and aggregates are
  written by publishing only: read-only here, for superusers too.
"""

from boxbench import permissions
from boxbench.models import Run

TRIAL_PRIVATE_FIELDS = ("owner", "cause", "replaces", "cost_usd")


def visible_runs(request):
    """The runs this staff member may see in the admin."""
    if permissions.may(request, permissions.VIEW_UNPUBLISHED):
        return Run.objects.all()
    return Run.objects.filter(published=True)


class PublishedUnlessPermitted:
    """A model admin of a run's records: those of unpublished runs only with
    view_unpublished_run. `run_path` is the lookup from the record to its run's published flag;
    every foreign key to a run offers the visible runs only."""

    run_path = "run__published"

    def get_queryset(self, request):
        found = super().get_queryset(request)
        if permissions.may(request, permissions.VIEW_UNPUBLISHED):
            return found
        return found.filter(**{self.run_path: True})

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Run:
            kwargs["queryset"] = visible_runs(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class TrialPrivateFields:
    """The trial admin without owners, causes, replacement links and costs unless the staff
    member may see private evidence."""

    def _private(self, request) -> bool:
        return permissions.may(request, permissions.VIEW_EVIDENCE)

    def get_list_display(self, request):
        shown = super().get_list_display(request)
        return shown if self._private(request) else _without(shown)

    def get_list_filter(self, request):
        shown = super().get_list_filter(request)
        return shown if self._private(request) else _without(shown)

    def get_exclude(self, request, obj=None):
        excluded = list(super().get_exclude(request, obj) or [])
        return excluded if self._private(request) else [*excluded, *TRIAL_PRIVATE_FIELDS]

    def get_readonly_fields(self, request, obj=None):
        shown = super().get_readonly_fields(request, obj)
        return shown if self._private(request) else _without(shown)


def _without(names) -> list:
    return [name for name in names if name not in TRIAL_PRIVATE_FIELDS]


class ReadOnly:
    """Viewable with the model's view permission; never added, changed or deleted here."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
