"""Loopback fakes of the cloud providers' HTTP APIs, for the adapter tests and demo mode.

Each fake serves its provider's documented endpoints, status codes and bodies on 127.0.0.1, and
runs every sandbox's commands and files for real in a local bubblewrap sandbox
(runner.providers.local), so benchmarks, the guest clock and the clock gate behave as on a real
sandbox. Faults are injected on demand (server.Faults): status codes with the provider's bodies,
Retry-After, connection resets, delays. tests/providers/cloud/test_fake_specs.py checks each HTTP
fake's routes and bodies against the provider's published spec. Modal has no HTTP API: its fake
(modal.py) serves the gRPC services of the `modal` wheel to the real SDK, and
tests/providers/cloud/test_modal.py checks that every RPC it serves is one of the wheel's.
"""
