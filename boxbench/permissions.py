"""Who may do what. Staff status only opens the admin: each action on a run and each private
part of the dashboard needs its own permission (custom permissions on Run, listed in
docs/deployment.md). Superusers hold them all. The `bench` CLI runs locally and checks none.

No Django imports: models.py reads RUN_PERMISSIONS for its Meta, views and the admin the names.
"""

START = "boxbench.start_run"
CANCEL = "boxbench.cancel_run"
AUDIT = "boxbench.audit_run"
PUBLISH = "boxbench.publish_run"
VIEW_UNPUBLISHED = "boxbench.view_unpublished_run"
VIEW_EVIDENCE = "boxbench.view_private_evidence"
VIEW_METRICS = "boxbench.view_metrics"

RUN_PERMISSIONS = [
    ("start_run", "Can start runs"),
    ("cancel_run", "Can cancel runs"),
    ("audit_run", "Can audit runs and resolve their failing checks"),
    ("publish_run", "Can publish runs"),
    ("view_unpublished_run", "Can view unpublished runs and their raw data"),
    ("view_private_evidence", "Can view private evidence (readiness, probes, failure costs)"),
    ("view_metrics", "Can read the operations metrics (/metrics)"),
]


def may(request, permission: str) -> bool:
    return request.user.has_perm(permission)


def may_rerun(request) -> bool:
    """Re-running held-back pairs starts runs and publishes each whose pair passes: both."""
    return may(request, START) and may(request, PUBLISH)
