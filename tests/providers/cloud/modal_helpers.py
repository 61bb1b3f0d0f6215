"""The Modal adapter against its loopback gRPC fake, for the Modal tests (the `modal` SDK is an
optional dependency: the fake is imported only when one starts)."""

from __future__ import annotations

import contextlib

from runner.providers import get_provider
from tests.providers.cloud.helpers import Cloud


@contextlib.contextmanager
def running_modal(root, **options):
    from runner.providers.fakes.modal import ModalFake

    fake = ModalFake(root, **options).start()
    try:
        yield Cloud("modal", fake, get_provider("modal", settings=fake.adapter_settings()))
    finally:
        fake.stop()
