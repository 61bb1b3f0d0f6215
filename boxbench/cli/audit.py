"""`bench audit RUN`: print the run's audit report (auditing it first when none is stored), or
record how a failing pair was resolved."""

from django.core.management.base import CommandError

from boxbench import holdbacks, publishing
from boxbench.cli.common import get_run
from boxbench.models import AuditResolution, Benchmark, Provider, ResolutionKind

help = "Print a run's audit report (running the audit if none is stored) or record a resolution."


def add_arguments(parser):
    parser.add_argument("run", help="Run id (UUID) or a unique run name.")
    parser.add_argument(
        "--again",
        action="store_true",
        help="Re-run the audit and store it, with the settings of the run's previous audit.",
    )
    parser.add_argument(
        "--current-settings",
        action="store_true",
        help="With --again: apply today's audit settings instead of the previous audit's.",
    )
    parser.add_argument(
        "--resolve",
        metavar="PROVIDER/BENCHMARK/CHECK",
        help="Record the resolution of one failed check (needs --kind and --note).",
    )
    parser.add_argument(
        "--resolve-failing",
        action="store_true",
        help="Record one resolution for every unresolved failing check (narrow the set with "
        "--check, --provider, --benchmark; needs --kind and --note).",
    )
    parser.add_argument("--check", action="append", metavar="NAME", help="Only this check.")
    parser.add_argument("--provider", action="append", metavar="SLUG", help="Only this provider.")
    parser.add_argument("--benchmark", action="append", metavar="SLUG", help="Only this benchmark.")
    parser.add_argument("--kind", choices=ResolutionKind.values)
    parser.add_argument("--note", help="What explains or resolves the failure, for the record.")
    parser.add_argument("--rerun", help="With --kind rerun: the run that re-ran the pair.")


def handle(options, out):
    run = get_run(options["run"])
    if options.get("resolve") and options.get("resolve_failing"):
        raise CommandError("give either --resolve or --resolve-failing, not both")
    if options.get("resolve"):
        _resolve(run, options, out)
        return
    if options.get("resolve_failing"):
        _resolve_failing(run, options, out)
        return
    if options.get("again") or run.audit_report is None:
        try:
            publishing.run_audit(run, current_settings=bool(options.get("current_settings")))
        except publishing.PublishRefused as exc:
            raise CommandError(str(exc)) from None
    out.write(format_report(run))


def _resolve(run, options, out):
    parts = options["resolve"].split("/")
    if len(parts) != 3:
        raise CommandError("--resolve takes PROVIDER/BENCHMARK/CHECK, e.g. docker/create/trend")
    if not options.get("kind") or not options.get("note"):
        raise CommandError("--resolve needs --kind and a --note saying why")
    provider = Provider.objects.filter(slug=parts[0]).first()
    benchmark = Benchmark.objects.filter(slug=parts[1]).order_by("-version").first()
    if provider is None or benchmark is None:
        raise CommandError(f"unknown provider or benchmark in {options['resolve']!r}")
    rerun = get_run(options["rerun"]) if options.get("rerun") else None
    if options["kind"] == ResolutionKind.RERUN and rerun is None:
        raise CommandError("--kind rerun needs --rerun RUN naming the run that re-ran the pair")
    resolution = AuditResolution(
        run=run,
        provider=provider,
        benchmark=benchmark,
        check_name=parts[2],
        kind=options["kind"],
        note=options["note"],
        rerun=rerun,
    )
    try:
        excluded = publishing.apply_resolution(resolution)
    except publishing.PublishRefused as exc:
        raise CommandError(str(exc)) from None
    out.write(f"Resolved {options['resolve']} ({resolution.get_kind_display()}).")
    if excluded:
        out.write(f"{excluded} trial(s) marked excluded by the objective outlier rule.")


def _resolve_failing(run, options, out):
    if not options.get("kind") or not options.get("note"):
        raise CommandError("--resolve-failing needs --kind and a --note saying why")
    if run.audit_report is None:
        raise CommandError(f"run {run.id} has no audit report yet: run `bench audit {run.id}`")
    wanted = {
        "check": options.get("check"),
        "provider": options.get("provider"),
        "benchmark": options.get("benchmark"),
    }
    chosen = [
        (provider, benchmark, check)
        for provider, benchmark, check in holdbacks.unresolved_failures(run)
        if (not wanted["provider"] or provider in wanted["provider"])
        and (not wanted["benchmark"] or benchmark in wanted["benchmark"])
        and (not wanted["check"] or check in wanted["check"])
    ]
    if not chosen:
        raise CommandError(f"no unresolved failing check of run {run.id} matches")
    rerun = get_run(options["rerun"]) if options.get("rerun") else None
    if options["kind"] == ResolutionKind.RERUN and rerun is None:
        raise CommandError("--kind rerun needs --rerun RUN naming the run that re-ran the pairs")
    try:
        excluded = publishing.resolve_failing(run, chosen, options["kind"], options["note"], rerun)
    except publishing.PublishRefused as exc:
        raise CommandError(f"nothing recorded: {exc}") from None
    kind = ResolutionKind(options["kind"]).label
    out.write(f"Recorded {len(chosen)} resolution(s) ({kind}):")
    for provider, benchmark, check in chosen:
        out.write(f"  {provider}/{benchmark}/{check}")
    if excluded:
        out.write(f"{excluded} trial(s) marked excluded by the objective outlier rule.")
    left = len(holdbacks.unresolved_failures(run))
    out.write(
        f"{left} failing check(s) still unresolved." if left else "Every failing check is resolved."
    )


def _value(x, suffix=""):
    return "-" if x is None else f"{x:.4g}{suffix}"


def format_report(run) -> str:
    report = run.audit_report or {}
    unresolved = set(holdbacks.unresolved_failures(run))
    lines = [f"Audit of run {run.name} ({run.id}), q level {report.get('q_level')}"]
    if report.get("settings_source"):
        lines.append(f"settings: {report['settings_source']}")
    for name, change in (report.get("settings_changed") or {}).items():
        lines.append(f"  {name}: {change['used']} (today's default: {change['current']})")
    if report.get("settings_missing"):
        missing = ", ".join(report["settings_missing"])
        lines.append(f"  not recorded by the previous audit, today's default applied: {missing}")
    family = report.get("families", {}).get("failure", {})
    if family:
        lines.append(
            f"failure family: {family.get('size', 0)} tests, {family.get('discoveries', 0)} "
            "discoveries"
        )
    for pair in report.get("pairs", []):
        detectable = pair.get("detectable_effect") or {}
        if detectable.get("unbounded"):
            effect = "unbounded"
        else:
            effect = _value(detectable.get("percent_of_median"), " % of the median")
        lines.append(
            f"\n{pair['provider']} / {pair['benchmark']}: {pair['verdict'].upper()}  "
            f"n={pair['n']}  detectable effect {effect}"
        )
        for name, finding in pair["checks"].items():
            flag = ""
            if finding["verdict"] == "fail":
                key = (pair["provider"], pair["benchmark"], name)
                flag = "  UNRESOLVED" if key in unresolved else "  resolved"
            lines.append(
                f"  {name:<15} {finding['verdict']:<10} effect {_value(finding['effect']):>8}  "
                f"p {_value(finding['p']):>8}  q {_value(finding['q']):>8}  "
                f"{finding['reason']}{flag}"
            )
        for item in pair.get("excluded_trials", []):
            lines.append(f"  excluded trial {item['trial_id']}: {item['reason']}")
    if not report.get("pairs"):
        lines.append("No successful trials to audit.")
    return "\n".join(lines)
