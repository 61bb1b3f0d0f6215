"""The run page's control room for staff (boxbench/control_room.py): resolve a pair's failing
check, re-run a held-back pair, and publish after a preview. Each is a POST with its CSRF token
and its own permission; the work is done by the code the CLI runs (publishing, reruns)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from boxbench import control_room, holdbacks, permissions, publishing, reruns
from boxbench.admin_forms import PairResolutionForm
from boxbench.models import ResolutionKind
from boxbench.views.access import visible_run
from boxbench.views.cache import uncached


@require_POST
def resolve(request, run_id):
    """Record the resolution of one failing check of one pair, as `bench audit --resolve`."""
    run = visible_run(request, run_id)
    if not permissions.may(request, permissions.AUDIT):
        raise PermissionDenied("resolving a failing check needs the audit_run permission")
    form = PairResolutionForm(run, request.POST)
    if not form.is_valid():
        problems = "; ".join(
            f"{form.fields[name].label if name in form.fields else 'form'}: "
            + " ".join(str(e) for e in errors)
            for name, errors in form.errors.items()
        )
        messages.error(request, f"Nothing recorded: {problems}")
        return redirect("run", run.id)
    provider, benchmark, check = form.cleaned_data["check"].split("/")
    kind = form.cleaned_data["kind"]
    try:
        excluded = publishing.resolve_failing(
            run, [(provider, benchmark, check)], kind, form.cleaned_data["note"], actor=request.user
        )
    except publishing.PublishRefused as exc:
        messages.error(request, f"Nothing recorded: {exc}")
        return redirect("run", run.id)
    saved = f"Recorded: {provider} / {benchmark} / {check}, {ResolutionKind(kind).label}."
    if excluded:
        saved += f" {excluded} trial(s) marked excluded."
    if run.published:
        saved += " The pair joins the board once the run is published again."
    messages.success(request, saved)
    return redirect("run", run.id)


@require_POST
def rerun(request, run_id):
    """Re-run one held-back pair (or every one, without `pair`), within the run's budget, as
    `bench rerun RUN --held-back`: planned now, started through the queue one at a time."""
    run = visible_run(request, run_id)
    if not permissions.may_rerun(request):
        raise PermissionDenied("re-running needs both the start_run and publish_run permissions")
    only = None
    if request.POST.get("pair"):
        provider, _, benchmark = request.POST["pair"].partition("/")
        only = [(provider, benchmark)]
        if only[0] not in reruns.pairs_to_rerun(run):
            messages.error(
                request,
                f"Nothing re-run: pair {request.POST['pair'][:100]!r} is not held back by an "
                "unresolved failing check, or was re-run before.",
            )
            return redirect("run", run.id)
    try:
        plan = reruns.budget(run, only=only)
        planned = reruns.plan_reruns(run, plan, actor=request.user) if plan.chosen else []
    except reruns.RerunRefused as exc:
        messages.error(request, f"Nothing re-run: {exc}")
        return redirect("run", run.id)
    reruns.start_next(run)
    names = ", ".join(r.name for r in planned) or "nothing to re-run"
    level = messages.SUCCESS if planned else messages.WARNING
    messages.add_message(request, level, f"{plan.describe()}. {names}.")
    return redirect("run", run.id)


@require_http_methods(["GET", "HEAD", "POST"])
def publish(request, run_id):
    """GET: what publishing the run would change on the board, and a button to confirm.
    POST: publish it (publishing.publish, as `bench publish`)."""
    run = visible_run(request, run_id)
    if not permissions.may(request, permissions.PUBLISH):
        raise PermissionDenied("publishing needs the publish_run permission")
    if request.method == "POST":
        again = run.published
        try:
            publishing.publish(run, actor=request.user)
        except publishing.PublishRefused as exc:
            messages.error(request, f"Not published: {exc}")
            return redirect("run-publish", run.id)
        held = holdbacks.held_back([run])[run.id]
        done = "published again" if again else "published"
        if held:
            names = ", ".join(f"{p['provider']} / {p['benchmark']}" for p in held)
            messages.warning(request, f"{run.name}: {done}; held back: {names}.")
        else:
            messages.success(request, f"{run.name}: {done}.")
        return redirect("run", run.id)
    preview = control_room.rehearse(run, actor=request.user)
    return uncached(render(request, "boxbench/publish_preview.html", {"run": run, **preview}))
