"""Who a page is for, remembered in the session so that serving a cached staff page asks the
database nothing about the user.

A page depends on its reader only through the staff flag and PAGE_PERMISSIONS (cache.py keys
pages by them). Reading those costs three queries (the user, their permissions, their groups'
permissions), more than the cached page itself, so the audience is computed once and kept in the
session (which lives in the shared cache: settings.SESSION_ENGINE is cached_db) beside the
*generation* it was computed under.

The generation is a random token in the shared cache, replaced whenever anything an audience
depends on changes (`connect_signals`): a user saved or deleted (staff, active and superuser
flags, password), a user's groups or permissions, a group's permissions, a group or permission
deleted. A memo of an older generation is recomputed, so a granted or revoked permission takes
effect on the next request. The token is replaced at once and again after the transaction commits:
a request that read the new token before the change was committed would otherwise remember the
old permissions under it. A lost cache loses the token, and the new random one matches no memo.
The token's key is salted with SECRET_KEY, so a new key (which ends every session) ends every memo.

Writes that send no signals (QuerySet.update, bulk_create, raw SQL) are caught by the memo's age:
it is recomputed after MAX_AGE_S at the latest. A page rendered on a cache miss is stored under
the audience computed afresh (`fresh`), never the remembered one, so a stale memo can only show
its own holder a page of their former audience; it never files a page where another reads it.
"""

import time
import uuid

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.utils.crypto import salted_hmac

from boxbench import permissions

PAGE_PERMISSIONS = (
    permissions.VIEW_UNPUBLISHED,
    permissions.VIEW_EVIDENCE,
    permissions.AUDIT,
    permissions.PUBLISH,
)
VISITOR = "visitor"
MAX_AGE_S = 60
MEMO_KEY = "boxbench_audience"
clock = time.time  # wall time: memos are compared across processes


def of(request) -> str:
    """The request's audience: from the session's memo while it is current, else computed."""
    user_id = request.session.get(SESSION_KEY)
    if user_id is None:
        return VISITOR  # no login: the user is anonymous without reading anything more
    # The generation is read before the permissions: a change committed in between replaces it,
    # so the memo made below is outdated at once rather than wrong for good.
    generation = current_generation()
    memo = _current_memo(request, user_id, generation)
    if memo is not None:
        return memo["audience"]
    audience = _computed(request.user)
    _remember(request, generation, audience)
    return audience


def of_with(request, keys_for) -> tuple[str, dict]:
    """The request's audience, as `of` finds it, and the cache entries under keys_for(audience).
    While the session remembers an audience, the generation is read in the same round trip as
    those entries, and they are kept only if the memo proves current under it."""
    user_id = request.session.get(SESSION_KEY)
    if user_id is None:
        return VISITOR, cache.get_many(keys_for(VISITOR))
    remembered = (request.session.get(MEMO_KEY) or {}).get("audience")
    if remembered is not None:
        token_key = _generation_key()
        found = cache.get_many([token_key, *keys_for(remembered)])
        generation = found.pop(token_key, None)
        if generation is not None and _current_memo(request, user_id, generation) is not None:
            return remembered, found
    audience = of(request)
    return audience, cache.get_many(keys_for(audience))


def fresh(request) -> str:
    """The request's audience from the user's permissions as they are now (remembered too)."""
    user_id = request.session.get(SESSION_KEY)
    if user_id is None:
        return VISITOR
    generation = current_generation()
    audience = _computed(request.user)
    memo = _current_memo(request, user_id, generation)
    if memo is None or memo["audience"] != audience:
        _remember(request, generation, audience)
    return audience


def _computed(user) -> str:
    """'visitor', or the staff flag and PAGE_PERMISSIONS of a logged-in user as 0s and 1s."""
    if not user.is_authenticated:
        return VISITOR  # inactive, deleted, or a password changed: Django flushed the session
    flags = [user.is_staff, *(user.has_perm(p) for p in PAGE_PERMISSIONS)]
    return "user-" + "".join("1" if flag else "0" for flag in flags)


def _current_memo(request, user_id: str, generation: str) -> dict | None:
    memo = request.session.get(MEMO_KEY) or {}
    current = (
        memo.get("user") == user_id
        and memo.get("generation") == generation
        and 0 <= clock() - memo.get("at", 0) < MAX_AGE_S
    )
    return memo if current else None


def _remember(request, generation: str, audience: str) -> None:
    if audience == VISITOR:
        return  # the session was flushed: nothing to remember it in
    memo = {"user": str(request.user.pk), "generation": generation, "at": clock()}
    request.session[MEMO_KEY] = {**memo, "audience": audience}


def _generation_key() -> str:
    return "audience-generation:" + salted_hmac("boxbench.audience", "generation").hexdigest()[:16]


def current_generation() -> str:
    key = _generation_key()
    token = cache.get(key)
    if token is None:
        cache.add(key, uuid.uuid4().hex, None)  # the first process to ask after a loss sets it
        token = cache.get(key)
    # A cache that keeps nothing (failing: boxbench/cache_guard.py) gets a token that matches no
    # memo, so every request computes its audience afresh.
    return token or uuid.uuid4().hex


def new_generation() -> None:
    cache.set(_generation_key(), uuid.uuid4().hex, None)


def _changed(sender, **kwargs) -> None:
    if kwargs.get("update_fields") == frozenset({"last_login"}):
        return  # every login saves this field; no audience depends on it
    new_generation()
    transaction.on_commit(new_generation, using=kwargs.get("using"))


def connect_signals() -> None:
    user = get_user_model()
    for model in (user, Group, Permission):
        post_save.connect(_changed, sender=model, dispatch_uid=f"audience-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"audience-del-{model.__name__}")
    for through in (user.groups.through, user.user_permissions.through, Group.permissions.through):
        m2m_changed.connect(
            _m2m_changed, sender=through, dispatch_uid=f"audience-{through.__name__}"
        )


def _m2m_changed(sender, action: str, **kwargs) -> None:
    if action.startswith("post_"):
        _changed(sender, **kwargs)
