from django.apps import AppConfig


class BoxbenchConfig(AppConfig):
    name = "boxbench"
    verbose_name = "boxbench results"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from boxbench import checks  # noqa: F401  (registers the system checks)
