"""The `cloud` fixture: each HTTP cloud adapter against its running loopback fake."""

import pytest

from tests.providers.cloud.helpers import CLOUD, running_fake


@pytest.fixture(params=CLOUD)
def cloud(request, tmp_path):
    with running_fake(request.param, tmp_path / "fake") as found:
        yield found
