"""`redact` strips a secret from text a provider echoes back, in every form it can come in."""

import base64
import urllib.parse

import pytest

from runner.providers.credentials import redact

SECRET = "sk_live/4f+9a=Zq8&Lm2x Rt7vWc3Yp1Kd6Hs0"


@pytest.mark.parametrize(
    "echo",
    [
        SECRET,
        urllib.parse.quote(SECRET, safe=""),
        urllib.parse.quote_plus(SECRET),
        base64.b64encode(SECRET.encode()).decode(),
        base64.urlsafe_b64encode(SECRET.encode()).decode(),
        base64.b64encode(f"user:{SECRET}".encode()).decode(),  # a Basic header
        base64.b64encode(f"u:{SECRET}".encode()).decode(),  # the other byte alignments
        base64.b64encode(f"us:{SECRET}".encode()).decode(),
        SECRET[:20] + "...",  # a truncated echo
        "***" + SECRET[-14:],  # a masked one
    ],
    ids=[
        "plain",
        "url",
        "url-plus",
        "b64",
        "b64-url",
        "basic",
        "basic-1",
        "basic-2",
        "head",
        "tail",
    ],
)
def test_no_form_of_the_secret_survives(echo):
    text = f"401 for key={echo} (request 7)"
    redacted = redact(text, SECRET)
    assert "[redacted]" in redacted and redacted.startswith("401 for key=")
    assert redacted.endswith(" (request 7)")
    for size in range(12, len(SECRET) + 1):  # no run of 12 of the secret's characters is left
        assert not any(SECRET[i : i + size] in redacted for i in range(len(SECRET) - size + 1))
    encoded = base64.b64encode(SECRET.encode()).decode()
    assert encoded[4:-4] not in redacted


def test_short_common_pieces_are_left_alone():
    assert redact("sk_live keys start with sk_live/", SECRET) == "sk_live keys start with sk_live/"
