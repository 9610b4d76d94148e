"""Fixtures for the dashboards tests; the store itself is built in dashboards_store.py."""

from __future__ import annotations

import pytest
from dashboards_store import KnownStore, fill_known_store


@pytest.fixture(scope="session")
def known_store(tmp_path_factory) -> KnownStore:
    """MLflow sqlite store (tmp dir) with a parent run and 16 nested trial runs of known values."""
    return fill_known_store(tmp_path_factory.mktemp("known_store"))


@pytest.fixture(scope="session")
def known_data(known_store):
    """collect() of the known store."""
    from dashboards.collect.sweep_runs import collect

    return collect(known_store.sweep, tracking_uri=known_store.uri)
