"""Helpers that several test modules share, one module per room of tests/ (web, runner,
reliability, providers).

A test module (`test_*.py`) or a `conftest.py` is never imported by another module:
`tests/test_layout.py` walks tests/ and fails when one is. Shared fixtures live in the
`conftest.py` of the folder that uses them (or of a parent folder); shared plain functions,
constants and classes live here, or in a named helper module beside their users (such as
`tests/web/factory.py`, `tests/runner/faults.py`, `tests/providers/cloud/helpers.py`).
"""
