#!/usr/bin/env python
import os
import sys

# Entry points that trust what SECRET_KEY signs: the queue worker runs the tasks django-q signed
# with it (a known key lets whoever reaches the broker forge one). The web server refuses the
# key in boxbench/wsgi.py, which runserver and gunicorn load.
KEYED_COMMANDS = ("qcluster",)

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")
    from django.core.management import execute_from_command_line

    if sys.argv[1:2] and sys.argv[1] in KEYED_COMMANDS:
        import django
        from django.core.exceptions import ImproperlyConfigured

        django.setup()
        from boxbench.checks import refuse_unsafe_secret_key

        try:
            refuse_unsafe_secret_key()
        except ImproperlyConfigured as exc:
            sys.exit(f"manage.py {sys.argv[1]}: {exc}")
    execute_from_command_line(sys.argv)
