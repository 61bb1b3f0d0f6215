from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template import RequestContext
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from boxbench import (
    admin_tables,
    holdbacks,
    models,
    permissions,
    provider_status,
    publishing,
    run_estimate,
)
from boxbench.admin_access import (
    PublishedUnlessPermitted,
    ReadOnly,
    TrialPrivateFields,
    visible_runs,
)
from boxbench.admin_forms import (
    RESOLVE_TEMPLATE,
    AuditResolutionForm,
    BulkResolutionForm,
    StartRunForm,
)
from boxbench.admin_provenance import FrozenOnceEnded, RecordedRunDeletion, frozen
from boxbench.login_throttle import ThrottledAdminAuthenticationForm
from boxbench.models import RunStatus
from runner import runs, steps
from runner.plan import PlanError, plan_run

# The login form refuses an address with too many failed logins (boxbench/login_throttle.py).
admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(models.Provider)
class ProviderAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["slug", "name", "adapter", "region", "region_marker", "declaration_digest"]
    search_fields = ["slug", "name"]


class UnitInline(ReadOnly, admin.TabularInline):
    model = models.Unit
    extra = 0
    fields = ["slug", "title", "digest"]


@admin.register(models.Benchmark)
class BenchmarkAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["slug", "version", "title", "section", "metric", "unit", "direction", "clock"]
    list_filter = ["section", "direction", "clock"]
    inlines = [UnitInline]


@admin.register(models.Unit)
class UnitAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["slug", "benchmark", "digest"]
    list_filter = ["benchmark"]


class RunTransitionInline(admin.TabularInline):
    """Status changes are rows written by the code: never added, edited or deleted here."""

    model = models.RunTransition
    extra = 0
    can_delete = False
    readonly_fields = ["from_status", "to_status", "at", "note", "actor"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.action(description="Audit selected runs (store the report)", permissions=["audit"])
def audit_runs(modeladmin, request, queryset):
    for run in queryset:
        try:
            failing = holdbacks.failing_checks(publishing.run_audit(run))
        except publishing.PublishRefused as exc:
            modeladmin.message_user(request, str(exc), messages.ERROR)
            continue
        level = messages.WARNING if failing else messages.SUCCESS
        modeladmin.message_user(
            request, f"{run.name}: audited, {len(failing)} failing check(s).", level
        )


@admin.register(models.Run)
class RunAdmin(RecordedRunDeletion, PublishedUnlessPermitted, admin.ModelAdmin):
    run_path = "published"
    list_display = [
        "name",
        "status",
        "progress_summary",
        "audit_summary",
        "held_back_pairs",
        "published",
        "created_at",
        "run_page",
    ]
    list_filter = ["status", "published"]
    list_per_page = 25  # each row counts its trials and reads its audit
    # The runner and the audit write these; an ended run is read-only as a whole (below). The
    # manifest and the reports are shown as tables (admin_tables), never as editable JSON.
    exclude = ["manifest", "audit_report", "imported_audit_report"]
    readonly_fields = [
        "id",
        "status",
        "published",
        "published_at",
        "audited_at",
        "progress",
        "manifest_tables",
        "audit_report_tables",
        "imported_audit_report_tables",
        "created_at",
        "started_at",
        "ended_at",
        "created_by",
    ]
    inlines = [RunTransitionInline]
    # Publishing and re-running are buttons of the run page's control room (views/control.py),
    # one run at a time after a preview, never bulk actions beside "Delete selected runs".
    actions = ["cancel_runs", audit_runs]

    # Each action needs its own permission (boxbench/permissions.py), not just staff status.

    def has_add_permission(self, request):
        return self.has_start_permission(request)

    def has_start_permission(self, request):
        return permissions.may(request, permissions.START)

    def has_cancel_permission(self, request):
        return permissions.may(request, permissions.CANCEL)

    def has_audit_permission(self, request):
        return permissions.may(request, permissions.AUDIT)

    # Starting, watching and cancelling runs (runner/plan.py, steps.py and runs.py do the work).

    def get_urls(self):
        start = self.admin_site.admin_view(self.start_view)
        resolve = self.admin_site.admin_view(self.resolve_view)
        return [
            path("start/", start, name="boxbench_run_start"),
            path("<uuid:run_id>/resolve/", resolve, name="boxbench_run_resolve"),
            *super().get_urls(),
        ]

    def resolve_view(self, request, run_id):
        """Several failing checks of one run resolved in one form: one AuditResolution each."""
        resolutions = self.admin_site._registry[models.AuditResolution]
        if not resolutions.has_add_permission(request):
            raise PermissionDenied
        run = visible_runs(request).filter(id=run_id).first()
        if run is None:
            raise Http404("no such run")
        form = BulkResolutionForm(run, request.POST or None)
        form.fields["rerun"].queryset = visible_runs(request)
        if request.method == "POST" and form.is_valid():
            chosen = form.cleaned_data["checks"]
            try:
                excluded = publishing.resolve_failing(
                    run,
                    [tuple(c.split("/")) for c in chosen],
                    form.cleaned_data["kind"],
                    form.cleaned_data["note"],
                    form.cleaned_data["rerun"],
                    actor=request.user,
                )
            except publishing.PublishRefused as exc:
                form.add_error(None, f"Nothing recorded: {exc}")
            else:
                kind = models.ResolutionKind(form.cleaned_data["kind"]).label
                saved = f"Recorded {len(chosen)} resolution(s) ({kind}): {', '.join(chosen)}."
                if excluded:
                    saved += f" {excluded} trial(s) marked excluded."
                self.message_user(request, saved, messages.SUCCESS)
                return redirect("run", run.id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Resolve failing checks of run {run.name}",
            "form": form,
            "run": run,
        }
        return HttpResponse(RESOLVE_TEMPLATE.render(RequestContext(request, context)))

    def has_change_permission(self, request, obj=None):
        return not frozen(obj) and super().has_change_permission(request, obj)

    def add_view(self, request, form_url="", extra_context=None):
        # A run is never typed in by hand: "Add run" opens the start-a-run form.
        if not self.has_add_permission(request):
            raise PermissionDenied
        return redirect("admin:boxbench_run_start")

    def start_view(self, request):
        """The start form: a named plan or benchmarks, providers with the doctor's verdicts,
        and "Estimate" (trials, time, cost) before "Start the run"."""
        if not self.has_start_permission(request):
            raise PermissionDenied
        verdicts = provider_status.verdicts()
        form = StartRunForm(request.POST or None, verdicts=verdicts)
        estimate = None
        if request.method == "POST" and form.is_valid():
            arguments = form.plan_arguments()
            if "_estimate" in request.POST:
                estimate = run_estimate.estimate(**arguments)
            else:
                try:
                    run = plan_run(
                        form.cleaned_data["name"],
                        **arguments,
                        allow_busy_account=form.cleaned_data["allow_busy_account"],
                        actor=request.user,
                    )
                except PlanError as exc:
                    form.add_error(None, str(exc))
                else:
                    steps.start_run(run)
                    refused = len(run.typed_manifest.refusals)
                    self.message_user(
                        request, f"Run {run.name} started ({refused} pair(s) refused)."
                    )
                    return redirect("admin:boxbench_run_change", run.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Start a run",
            "form": form,
            "verdicts": sorted(verdicts.items()),
            "estimate": estimate,
        }
        return TemplateResponse(request, "boxbench/admin_start_run.html", context)

    @admin.display(description="Progress")
    def progress_summary(self, run):
        return admin_tables.progress_text(run)

    @admin.display(description="Audit")
    def audit_summary(self, run):
        return admin_tables.audit_text(run)

    @admin.display(description="Held back")
    def held_back_pairs(self, run):
        return admin_tables.held_back_text(run)

    @admin.display(description="Run page")
    def run_page(self, run):
        return format_html('<a href="{}">view</a>', run.get_absolute_url())

    @admin.display(description="Manifest")
    def manifest_tables(self, run):
        return admin_tables.manifest_tables(run)

    @admin.display(description="Audit report")
    def audit_report_tables(self, run):
        return admin_tables.audit_tables(run, run.audit_report)

    @admin.display(description="Imported audit report (kept for comparison)")
    def imported_audit_report_tables(self, run):
        return admin_tables.audit_tables(run, run.imported_audit_report)

    @admin.display(description="Progress per provider and benchmark")
    def progress(self, run):
        rows = []
        for cell in runs.progress(run):
            if "refusal" in cell:
                status = f"{cell['refusal']} (missing {cell['missing']})"
                rows.append((cell["provider"], cell["benchmark"], status, "", ""))
            else:
                rows.append(
                    (
                        cell["provider"],
                        cell["benchmark"],
                        f"{cell['done']} / {cell['target']}",
                        cell["failures"],
                        cell["queued"] + cell["running"],
                    )
                )
        notes = format_html_join("", "<p>{}</p>", ((n,) for n in runs.chain_notes(run)))
        if not rows:
            return format_html("{}No trials.", notes)
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows
        )
        return format_html(
            "{}<table><tr><th>Provider</th><th>Benchmark</th><th>Done / target</th>"
            "<th>Failures</th><th>Waiting</th></tr>{}</table>",
            notes,
            body,
        )

    @admin.action(
        description="Cancel selected runs (their sandboxes are cleaned up)", permissions=["cancel"]
    )
    def cancel_runs(self, request, queryset):
        for run in queryset:
            if run.status not in (RunStatus.PLANNED, RunStatus.RUNNING):
                self.message_user(
                    request, f"{run.name} is {run.status}: nothing to cancel.", messages.WARNING
                )
                continue
            removed = runs.cancel_run(run, actor=request.user)
            self.message_user(request, f"{run.name}: {run.status}, {removed} sandbox(es) removed.")


class PrivateEvidenceMixin:
    """Evidence is private: its model permissions and the view_private_evidence permission."""

    def _private(self, request) -> bool:
        return permissions.may(request, permissions.VIEW_EVIDENCE)

    def has_view_permission(self, request, obj=None):
        return self._private(request) and super().has_view_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return self._private(request) and super().has_change_permission(request, obj)

    def has_add_permission(self, request, *args):
        return self._private(request) and super().has_add_permission(request, *args)

    def has_delete_permission(self, request, obj=None):
        return self._private(request) and super().has_delete_permission(request, obj)


def successful_unless_private(request, queryset, outcome_field: str):
    """An unsuccessful trial (its outcome, owner and cause) is private evidence, in the admin as
    on the unit pages: without view_private_evidence, the successful trials and theirs only."""
    if permissions.may(request, permissions.VIEW_EVIDENCE):
        return queryset
    return queryset.filter(**{outcome_field: models.Outcome.SUCCESS})


class EvidenceInline(PrivateEvidenceMixin, FrozenOnceEnded, admin.TabularInline):
    model = models.Evidence
    extra = 0


@admin.register(models.Trial)
class TrialAdmin(TrialPrivateFields, PublishedUnlessPermitted, FrozenOnceEnded, admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "benchmark",
        "unit",
        "provider",
        "round",
        "seq",
        "attempt",
        "state",
        "outcome",
        "owner",
    ]
    list_filter = ["state", "outcome", "owner", "provider", "benchmark"]
    list_select_related = ["run", "benchmark", "unit", "provider"]
    raw_id_fields = ["run", "unit", "replaces"]
    inlines = [EvidenceInline]

    def get_queryset(self, request):
        return successful_unless_private(request, super().get_queryset(request), "outcome")


@admin.register(models.MeasurementName)
class MeasurementNameAdmin(PublishedUnlessPermitted, FrozenOnceEnded, admin.ModelAdmin):
    """The unit and clock of each measurement name a run's trials record."""

    list_display = ["run", "benchmark", "kind", "name", "unit", "clock"]
    list_filter = ["kind", "clock", "benchmark"]
    list_select_related = ["run", "benchmark"]
    raw_id_fields = ["run"]


@admin.register(models.Evidence)
class EvidenceAdmin(
    PublishedUnlessPermitted, PrivateEvidenceMixin, FrozenOnceEnded, admin.ModelAdmin
):
    run_path = "trial__run__published"
    list_display = ["trial", "kind", "at"]
    list_filter = ["kind"]
    raw_id_fields = ["trial"]


@admin.register(models.AuditResolution)
class AuditResolutionAdmin(PublishedUnlessPermitted, admin.ModelAdmin):
    list_display = ["run", "provider", "benchmark", "check_name", "kind", "at"]
    form = AuditResolutionForm
    readonly_fields = ["actor", "at"]

    # Recording a resolution is part of auditing: audit_run alone grants it; changing or deleting
    # a recorded one needs the model's permission as well.

    def has_add_permission(self, request):
        return permissions.may(request, permissions.AUDIT)

    # A published run's resolutions are final (AuditResolution.is_final): shown, never changed
    # or deleted, so no edit can alter the board without a publication.

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        final = obj is not None and obj.is_final()
        return allowed and not final and permissions.may(request, permissions.AUDIT)

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        final = obj is not None and obj.is_final()
        return allowed and not final and permissions.may(request, permissions.AUDIT)

    def save_model(self, request, obj, form, change):
        # Recorded through publishing.apply_resolution so an outlier exclusion also marks the
        # audit's excluded trials, in the same transaction.
        obj.actor = request.user
        excluded = publishing.apply_resolution(obj)
        if excluded:
            self.message_user(request, f"{excluded} trial(s) marked excluded.", messages.INFO)
        if obj.run.published:
            self.message_user(
                request,
                "The run is published: the pair stays held back until someone with publish_run "
                "publishes the run again.",
                messages.WARNING,
            )

    def response_add(self, request, obj, post_url_continue=None):
        # Back to the run's report, where the remaining failing checks (or the way to publish)
        # are listed; "Save and add another" and "Save and continue" keep their usual meaning.
        if "_addanother" in request.POST or "_continue" in request.POST:
            return super().response_add(request, obj, post_url_continue)
        self.message_user(request, f"Resolution of {obj.check_name} recorded.", messages.SUCCESS)
        return redirect("run", obj.run_id)


@admin.register(models.Aggregate)
class AggregateAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["scope", "key", "computed_at"]
