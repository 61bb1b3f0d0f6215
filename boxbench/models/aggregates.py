"""What the dashboard reads: one materialized row per page, computed when results are published."""

from django.core.cache import cache
from django.db import connections, models, transaction
from django.utils import timezone

from boxbench.choices import Scope

# The publication version in the shared cache, so that a cached page costs one cache round trip
# and no query (boxbench/views/cache.py). replace_all forgets it when the rows change; it also
# expires after VERSION_TTL_S, the longest a page can lag a publication whose process died
# between its commit and forgetting the version.
VERSION_KEY = "publication-version"
VERSION_TTL_S = 10


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
        # One statement, where building the ORM's query cost a cached page more than its hit.
        with connections[self.db].cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {self.model._meta.db_table} WHERE scope = %s AND key = %s",
                [Scope.OVERVIEW.value, aggregate_key()],
            )
            found = cursor.fetchone()
        return None if found is None else found[0]

    def replace_all(self, rows: list["Aggregate"]) -> None:
        """Every page's row replaced by `rows` (none: nothing published), in one transaction,
        and the publication version the page cache keeps (VERSION_KEY) forgotten."""
        with transaction.atomic(using=self.db):
            # Forgotten inside the transaction too: a reader on this connection (a test's) then
            # reads the new version; a reader elsewhere still reads the old one until commit.
            cache.delete(VERSION_KEY)
            self.all().delete()
            self.bulk_create(rows, batch_size=500)
            transaction.on_commit(lambda: cache.delete(VERSION_KEY), using=self.db)


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
