"""Loopback fakes of the cloud providers' HTTP APIs, for the adapter tests and demo mode.

Each fake serves its provider's documented endpoints, status codes and bodies on 127.0.0.1, and
runs every sandbox's commands and files for real in a local bubblewrap sandbox
(runner.providers.local), so benchmarks, the guest clock and the clock gate behave as on a real
sandbox. Faults are injected on demand (server.Faults): status codes with the provider's bodies,
Retry-After, connection resets, delays. tests/providers/test_fake_specs.py checks each fake's
routes and bodies against the provider's published spec.
"""
