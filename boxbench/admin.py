from django.contrib import admin

from boxbench import models


@admin.register(models.Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "adapter", "region", "region_marker", "declaration_digest"]
    search_fields = ["slug", "name"]


class UnitInline(admin.TabularInline):
    model = models.Unit
    extra = 0
    fields = ["slug", "title", "digest"]


@admin.register(models.Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["slug", "version", "title", "section", "metric", "unit", "direction", "clock"]
    list_filter = ["section", "direction", "clock"]
    inlines = [UnitInline]


@admin.register(models.Unit)
class UnitAdmin(admin.ModelAdmin):
    list_display = ["slug", "benchmark", "digest"]
    list_filter = ["benchmark"]


class RunTransitionInline(admin.TabularInline):
    model = models.RunTransition
    extra = 0
    can_delete = False
    readonly_fields = ["from_status", "to_status", "at", "note", "actor"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "status", "published", "created_at", "ended_at"]
    list_filter = ["status", "published"]
    readonly_fields = ["id", "status", "published", "published_at", "audited_at"]
    inlines = [RunTransitionInline]


class MeasurementInline(admin.TabularInline):
    model = models.Measurement
    extra = 0


class EvidenceInline(admin.TabularInline):
    model = models.Evidence
    extra = 0


@admin.register(models.Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = [
        "id", "run", "benchmark", "unit", "provider", "round", "seq", "attempt", "state",
        "outcome", "owner",
    ]  # fmt: skip
    list_filter = ["state", "outcome", "owner", "provider", "benchmark"]
    list_select_related = ["run", "benchmark", "unit", "provider"]
    raw_id_fields = ["run", "unit", "replaces"]
    inlines = [MeasurementInline, EvidenceInline]


@admin.register(models.Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = ["trial", "kind", "name", "value", "unit", "clock", "clock_gate"]
    list_filter = ["kind", "clock", "clock_gate"]
    raw_id_fields = ["trial"]


@admin.register(models.Evidence)
class EvidenceAdmin(admin.ModelAdmin):
    list_display = ["trial", "kind", "at"]
    list_filter = ["kind"]
    raw_id_fields = ["trial"]


@admin.register(models.AuditResolution)
class AuditResolutionAdmin(admin.ModelAdmin):
    list_display = ["run", "provider", "benchmark", "check_name", "kind", "at"]


@admin.register(models.Aggregate)
class AggregateAdmin(admin.ModelAdmin):
    list_display = ["scope", "key", "computed_at"]
