"""The admin's forms: starting a run, recording one resolution or several at once."""

from django import forms
from django.core.exceptions import ValidationError
from django.template import Template

from boxbench import holdbacks, models, publishing
from runner import named_plans
from runner.benchmarks import all_benchmarks
from runner.declarations import BENCH_ONLY, load_all


def _benchmark_choices():
    return [(slug, module.DEFINITION.title) for slug, module in all_benchmarks().items()]


def _provider_choices():
    return [
        (slug, declaration.name)
        for slug, declaration in load_all().items()
        if slug not in BENCH_ONLY
    ]


def _plan_choices():
    return [("", "None: the benchmarks ticked below")] + [
        (name, f"{name}: {make().description}") for name, make in named_plans.PLANS.items()
    ]


class StartRunForm(forms.Form):
    name = forms.CharField(max_length=200)
    plan = forms.ChoiceField(
        choices=_plan_choices,
        required=False,
        help_text="A named plan brings its benchmarks, units, trials and parallel trials.",
    )
    benchmarks = forms.MultipleChoiceField(
        choices=_benchmark_choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Without a plan: the benchmarks to run.",
    )
    providers = forms.MultipleChoiceField(
        choices=_provider_choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="Each with the doctor's verdict (manage.py bench doctor): a provider that is "
        "not configured is refused before the run starts.",
    )
    trials = forms.IntegerField(
        min_value=1,
        max_value=10_000,
        required=False,
        help_text="Trials per unit; empty: the plan's, else each benchmark's own number.",
    )
    concurrency = forms.IntegerField(
        min_value=1,
        max_value=256,
        required=False,
        help_text="Trials in parallel per provider; empty: the plan's, else each benchmark's "
        "declaration.",
    )
    allow_busy_account = forms.BooleanField(
        required=False,
        help_text="Start each chain even if the account holds other live sandboxes (recorded).",
    )

    def __init__(self, *args, verdicts=None, **kwargs):
        super().__init__(*args, **kwargs)
        if verdicts:
            self.fields["providers"].choices = [
                (slug, f"{name} ({verdicts[slug].state})" if slug in verdicts else name)
                for slug, name in _provider_choices()
            ]

    def clean(self):
        data = super().clean()
        if data.get("plan") and data.get("benchmarks"):
            raise forms.ValidationError(
                "A plan names its own benchmarks: choose a plan or tick benchmarks, not both."
            )
        if not data.get("plan") and not data.get("benchmarks") and not self.errors:
            raise forms.ValidationError("Choose a plan or tick at least one benchmark.")
        return data

    def plan_arguments(self) -> dict:
        """What runner.plan.plan_run takes, as `bench run --plan` fills it in."""
        data = self.cleaned_data
        plan = named_plans.get_plan(data["plan"]) if data.get("plan") else None
        return {
            "benchmarks": list(plan.benchmarks) if plan else data["benchmarks"],
            "units": plan.units if plan else None,
            "providers": data["providers"],
            "trials": data.get("trials") or (plan.trials if plan else None),
            "concurrency": data.get("concurrency") or (plan.concurrency if plan else None),
        }


class BulkResolutionForm(forms.Form):
    checks = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        help_text="The run's unresolved failing checks (provider/benchmark/check).",
    )
    kind = forms.ChoiceField(choices=models.ResolutionKind.choices)
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="Why, for the record."
    )
    rerun = forms.ModelChoiceField(
        models.Run.objects.all(), required=False, help_text="With a re-run: the run that re-ran."
    )

    def __init__(self, run, *args, **kwargs):
        super().__init__(*args, **kwargs)
        failing = ["/".join(f) for f in holdbacks.unresolved_failures(run)]
        self.fields["checks"].choices = [(f, f) for f in failing]
        self.fields["checks"].initial = failing

    def clean(self):
        data = super().clean()
        kind, checks = data.get("kind"), data.get("checks") or []
        if kind == models.ResolutionKind.OUTLIERS_EXCLUDED:
            others = [c for c in checks if not c.endswith("/outliers")]
            if others:
                raise forms.ValidationError(
                    "Only the outliers check is resolved by excluding outliers; unselect: "
                    + ", ".join(others)
                )
        if kind == models.ResolutionKind.RERUN and not data.get("rerun"):
            raise forms.ValidationError("A re-run resolution names the run that re-ran the pairs.")
        return data


RESOLVE_TEMPLATE = Template(
    """{% extends "admin/base_site.html" %}
{% block content %}
<p><a href="{% url 'run' run.id %}">Back to the run's report</a></p>
{% if not form.checks.field.choices %}<p>This run has no unresolved failing check.</p>{% else %}
<form method="post" id="bulk-resolve">{% csrf_token %}
{{ form.non_field_errors }}
<table>{{ form.as_table }}</table>
<input type="submit" value="Record the resolutions">
</form>{% endif %}
{% endblock %}"""
)


# The resolutions recorded from the run page; a re-run is recorded by the re-run itself.
PAIR_KINDS = [
    (k.value, k.label)
    for k in (models.ResolutionKind.EXPLAINED, models.ResolutionKind.OUTLIERS_EXCLUDED)
]


class PairResolutionForm(forms.Form):
    """One failing check of one pair resolved from the run page: the check chosen from the
    run's unresolved failing ones, never typed."""

    check = forms.ChoiceField(label="Failing check")
    kind = forms.ChoiceField(label="Resolution", choices=PAIR_KINDS)
    note = forms.CharField(label="Note", max_length=2000, help_text="Why, for the record.")

    def __init__(self, run, *args, **kwargs):
        super().__init__(*args, **kwargs)
        failing = ["/".join(f) for f in holdbacks.unresolved_failures(run)]
        self.fields["check"].choices = [(f, f) for f in failing]


class AuditResolutionForm(forms.ModelForm):
    class Meta:
        model = models.AuditResolution
        fields = ["run", "provider", "benchmark", "check_name", "kind", "note", "rerun"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "check_name" not in self.fields:
            return  # a view-only page: the admin shows the recorded name as text
        # Chosen, never typed: the run's unresolved failing checks when the run is known (the
        # run page's links name it), else every check the audit runs.
        self.fields["check_name"] = forms.ChoiceField(
            label="Check name",
            choices=[(c, c) for c in self._check_names()],
            help_text="The failing checks of the run named in the address; open this form from "
            "the run page's links, or use its control room, to see only those.",
        )

    def _check_names(self) -> list[str]:
        run_id = self.data.get("run") or self.initial.get("run") or self.instance.run_id
        run = None
        if run_id:
            try:
                # The run field's own choices: the runs this staff member may see.
                visible = getattr(self.fields.get("run"), "queryset", None)
                run = visible.filter(id=run_id).first() if visible is not None else None
            except (ValueError, ValidationError):  # not a UUID: the run field says so
                run = None
        names = {c for _, _, c in holdbacks.unresolved_failures(run)} if run else set()
        if self.instance.check_name:
            names.add(self.instance.check_name)
        if not names:
            from stats.audit import CHECKS  # scipy: loaded only for this form

            names = set(CHECKS)
        return sorted(names)

    def clean(self):
        data = super().clean()
        if all(data.get(k) for k in ("run", "provider", "benchmark", "check_name", "kind")):
            problem = publishing.resolution_problem(
                data["run"],
                data["provider"].slug,
                data["benchmark"].slug,
                data["check_name"],
                data["kind"],
            )
            if problem:
                raise forms.ValidationError(problem)
        if data.get("kind") == models.ResolutionKind.RERUN and not data.get("rerun"):
            raise forms.ValidationError("A re-run resolution names the run that re-ran the pair.")
        return data
