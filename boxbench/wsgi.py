import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")
application = get_wsgi_application()

# After setup: settings and apps are loaded. Serving with DEBUG off refuses an unsafe key.
from boxbench.checks import refuse_unsafe_secret_key  # noqa: E402

refuse_unsafe_secret_key()
