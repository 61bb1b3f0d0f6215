"""What the dashboard reads: one materialized row per page, computed when results are published."""

from django.db import connections, models
from django.utils import timezone

from boxbench.choices import Scope


def aggregate_key(*parts) -> str:
    return "/".join(str(part) for part in parts)


class AggregateQuerySet(models.QuerySet):
    def page(self, scope: Scope, *parts) -> dict | None:
        """The materialized data of one page, or None when nothing is published for it."""
        found = self.filter(scope=scope, key=aggregate_key(*parts))
        return found.values_list("data", flat=True).first()

    def publication_version(self) -> int | None:
        """The overview row's id: materialize() replaces every row at once, so each
        publication brings a new one."""
        # Every cached page asks this first: one statement, where building the ORM's query
        # cost the request more than the cache hit it leads to.
        with connections[self.db].cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {self.model._meta.db_table} WHERE scope = %s AND key = %s",
                [Scope.OVERVIEW.value, aggregate_key()],
            )
            found = cursor.fetchone()
        return None if found is None else found[0]


class Aggregate(models.Model):
    """A materialized view the dashboard reads: computed once when results are published."""

    scope = models.CharField(max_length=20)  # a Scope
    key = models.CharField(max_length=250)  # aggregate_key of the page's parts
    data = models.JSONField()
    computed_at = models.DateTimeField(default=timezone.now)

    objects = AggregateQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="aggregate_scope_key_uniq"),
        ]

    @classmethod
    def of(cls, scope: Scope, *parts, data: dict) -> "Aggregate":
        """The row of one page, keyed as AggregateQuerySet.page reads it."""
        return cls(scope=scope, key=aggregate_key(*parts), data=data)
