"""What results are of: providers (with their declarations and pricing), benchmarks and units."""

from django.db import models

from boxbench.choices import Clock, Direction, Section
from stats.labels import DEFAULT_RANKING_FLOOR


class Provider(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    adapter = models.CharField(max_length=50, help_text="Adapter module in runner/providers/.")
    region = models.CharField(max_length=50, blank=True)
    region_marker = models.CharField(
        max_length=20, blank=True, help_text="Shown beside results timed across an ocean."
    )
    region_note = models.TextField(blank=True)
    declaration = models.JSONField(default=dict)
    declaration_digest = models.CharField(max_length=64, blank=True)
    pricing = models.JSONField(default=dict)
    pricing_digest = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.name


class Benchmark(models.Model):
    slug = models.SlugField(max_length=80)
    version = models.CharField(max_length=20, default="1")
    title = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    section = models.CharField(max_length=30, choices=Section.choices())
    metric = models.CharField(max_length=80, help_text="Name of the main measurement.")
    unit = models.CharField(max_length=20, default="ms")
    direction = models.CharField(
        max_length=10, choices=Direction.choices(), default=Direction.LOWER.value
    )
    statistic = models.CharField(max_length=30, default="median")
    clock = models.CharField(max_length=10, choices=Clock.choices())
    cpus = models.PositiveSmallIntegerField(default=2)
    memory_mib = models.PositiveIntegerField(default=4096)
    trials_per_unit = models.PositiveIntegerField(default=20)
    ranking_floor = models.PositiveIntegerField(default=DEFAULT_RANKING_FLOOR)
    required_capabilities = models.JSONField(default=list, blank=True)
    stage_names = models.JSONField(default=list, blank=True)
    charted = models.BooleanField(default=True, help_text="Destroy is recorded, not charted.")
    steps_include_create_or_build = models.BooleanField(default=False)

    class Meta:
        ordering = ["section", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="benchmark_slug_version_uniq"),
            models.CheckConstraint(
                condition=models.Q(trials_per_unit__gte=1),
                name="benchmark_trials_per_unit_positive",
            ),
        ]

    def __str__(self):
        return f"{self.title} v{self.version}"


class Unit(models.Model):
    benchmark = models.ForeignKey(Benchmark, models.CASCADE, related_name="units")
    slug = models.SlugField(max_length=120)
    title = models.CharField(max_length=200, blank=True)
    definition = models.JSONField(default=dict, blank=True)
    digest = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["benchmark", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "slug"], name="unit_benchmark_slug_uniq"),
        ]

    def __str__(self):
        return self.slug
