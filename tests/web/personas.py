"""Who visits, and every address they can try: the personas of the permission matrix and the
URL fuzz, and the concrete URLs of every named route in the URLconf, filled with real objects."""

from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
from django.urls.resolvers import RoutePattern

from boxbench import permissions
from boxbench.models import Benchmark, Evidence, Run, RunStatus, Trial

CUSTOM = [codename for codename, _ in permissions.RUN_PERMISSIONS]
# anonymous, a signed-in outsider, staff who may only look, staff with one permission each
# (on top of looking: the admin's run list needs a view permission), and a superuser.
PERSONAS = ["anonymous", "member", "viewer", *CUSTOM, "superuser"]


def login(client, persona: str, also: tuple[str, ...] = ()) -> None:
    """Sign the client in as a fresh user of this persona (or out, for anonymous); staff get
    the permissions named in `also` on top of their own."""
    client.logout()
    if persona == "anonymous":
        return
    name = f"p-{persona}"
    if persona == "superuser":
        user = User.objects.create_superuser(name, password="pw-persona-123")
    else:
        user = User.objects.create_user(name, password="pw-persona-123")
    if persona not in ("member", "superuser"):
        user.is_staff = True
        user.save()
        viewing = Permission.objects.filter(
            content_type__app_label="boxbench", codename__startswith="view_"
        ).exclude(codename__in=CUSTOM)
        user.user_permissions.add(*viewing)
    if persona in CUSTOM:
        user.user_permissions.add(Permission.objects.get(codename=persona))
    if persona not in ("member", "superuser"):
        user.user_permissions.add(*Permission.objects.filter(codename__in=also))
    client.force_login(user)


def allowed(persona: str, codename: str) -> bool:
    return persona in (codename, "superuser")


class World:
    """The objects the URLs point at: a published run (the fixture), an unpublished run with a
    trial and evidence, a benchmark the code defines that nothing is published for."""

    def __init__(self, published: Run):
        self.published = published
        trial = Trial.objects.filter(run=published).first()
        Evidence.objects.create(trial=trial, kind="readiness", data={"attempts": 3})
        self.unpublished = Run.objects.create(name="pending", status=RunStatus.PLANNED)
        self.idle = Benchmark.objects.create(
            slug="density", title="Density", section="workload", metric="total", clock="job_host"
        )
        self.user = User.objects.create_user("someone", password="pw-someone-123")


def routes() -> list[tuple[str, dict[str, str]]]:
    """(qualified name, {path parameter: converter kind}) of every named pattern in the URLconf
    (a regex group's kind is "regex")."""
    found = []

    def walk(patterns, namespace):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = [*namespace, pattern.namespace] if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif pattern.name:
                if isinstance(pattern.pattern, RoutePattern):
                    kinds = {
                        k: type(c).__name__.removesuffix("Converter").lower()
                        for k, c in pattern.pattern.converters.items()
                    }
                else:
                    kinds = dict.fromkeys(pattern.pattern.regex.groupindex, "regex")
                found.append((":".join([*namespace, pattern.name]), kinds))

    walk(get_resolver().url_patterns, [])
    return found


def _admin_model(name: str):
    """The model an admin route like admin:boxbench_run_change serves, or None."""
    for model in admin.site._registry:
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}_"
        if name.startswith(prefix):
            return model
    return None


def kwarg_choices(world: World, name: str, kwarg: str) -> list[tuple[str, str]]:
    """(label, value) for one path parameter of one route: real objects, and for runs both a
    published and an unpublished one."""
    if kwarg == "run_id":
        return [("published", str(world.published.id)), ("unpublished", str(world.unpublished.id))]
    if kwarg == "slug":
        if name in ("provider", "api-provider", "provider-badge", "provider-feed"):
            return [("", "local")]
        if name == "benchmark":
            return [("", "create"), ("idle", "density")]
        return [("", "create")]
    if kwarg == "benchmark":
        return [("", "create")]
    if kwarg == "unit_slug":
        return [("", "create")]
    if kwarg == "app_label":
        return [(label, label) for label in ("auth", "boxbench", "django_q")]
    if kwarg == "content_type_id":
        return [("", str(ContentType.objects.get_for_model(Run).id))]
    if name == "admin:view_on_site":
        return [("", str(world.unpublished.id))]
    if kwarg in ("object_id", "id"):
        model = _admin_model(name) or User
        obj = {Run: world.unpublished, User: world.user}.get(model) or model.objects.first()
        return [("", str(obj.pk) if obj else "1")]
    raise AssertionError(f"no value for {kwarg} of route {name}: add one to tests/web/personas.py")


# Routes whose page is chosen in the query string: the query that names a real page.
QUERIES = dict.fromkeys(["compare", "compare-csv", "api-compare"], "?a=local&b=docker")


def urls(world: World) -> list[tuple[str, str]]:
    """(key, URL) for every named route, once per choice of real object."""
    out = []
    for name, kwargs in routes():
        combos = [("", {})]
        for kwarg in kwargs:
            combos = [
                ("/".join(filter(None, [label, choice])), {**values, kwarg: value})
                for label, values in combos
                for choice, value in kwarg_choices(world, name, kwarg)
            ]
        for label, values in combos:
            url = reverse(name, kwargs=values) + QUERIES.get(name, "")
            out.append((f"{name} {label}".strip(), url))
    return out


SENTINELS = {
    "slug": "zzsentinelzz",
    "str": "zzsentinelzz",
    "path": "zzsentinelzz",
    "uuid": "abcdef01-2345-4678-9abc-def012345678",
    "int": "987654321",
}


def hostile_paths(world: World, hostile: list[str]) -> list[tuple[str, str]]:
    """Every route with each path parameter, one at a time, replaced by each hostile value
    (routes whose converter admits no sentinel, like admin:app_list, get the admin catch-all)."""
    out = []
    for name, kwargs in routes():
        if not kwargs:
            continue
        for kwarg, kind in kwargs.items():
            values = {k: kwarg_choices(world, name, k)[0][1] for k in kwargs}
            sentinel = SENTINELS.get(kind, "zzsentinelzz")
            try:
                template = reverse(name, kwargs={**values, kwarg: sentinel})
            except NoReverseMatch:
                template = "/admin/zzsentinelzz/"
            out += [(f"{name} {kwarg}={h}", template.replace(sentinel, h)) for h in hostile]
    return out
