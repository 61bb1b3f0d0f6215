from django.apps import AppConfig


class BoxbenchConfig(AppConfig):
    name = "boxbench"
    verbose_name = "boxbench results"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_migrate
        from django_q.signals import post_spawn

        from boxbench import (
            checks,  # noqa: F401  (registers the system checks)
            login_throttle,
        )
        from boxbench.views import audience
        from runner import recovery

        # A change to a user, a group or a permission ends every remembered page audience.
        audience.connect_signals()
        # Failed logins count towards the admin's login throttle.
        login_throttle.connect()

        # Setup (migrate) installs the recovery schedule; each qcluster recovers when it starts.
        post_migrate.connect(recovery.install_schedule, sender=self)
        post_spawn.connect(recovery.on_worker_spawn, dispatch_uid="boxbench-startup-recovery")
