"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .support.postgres import REQUIRE_ENV, PostgresCluster, find_bin_dir, postgres_cluster
from .support.spread import KNOWN_REPLICA_GAPS, REPLICAS, SINGLE_PROCESS, ReplicaClusters


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """A PostgreSQL server of this test run (started once; stopped and deleted at the end).

    Skipped where the server binaries are missing, unless $AOPHUB_REQUIRE_POSTGRES is set (CI).
    """
    bin_dir = find_bin_dir()
    if bin_dir is None:
        reason = "PostgreSQL server binaries not found (install Debian's postgresql package: make install)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{reason}; ${REQUIRE_ENV} is set, so the PostgreSQL tests must run")
        pytest.skip(reason)
    with postgres_cluster(bin_dir) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def replica_clusters(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaClusters]:
    """The replica clusters a module's tests share when they run over three replicas (tests/support/spread.py)."""
    clusters = ReplicaClusters(postgres, tmp_path_factory.mktemp("spread"))
    try:
        yield clusters
    finally:
        clusters.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Over replicas, skip the tests of SINGLE_PROCESS and expect the known gaps to fail (tests/support/spread.py)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or REPLICAS not in callspec.params.values():
            continue
        name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        if name in SINGLE_PROCESS:
            item.add_marker(pytest.mark.skip(reason=f"not over replicas: {SINGLE_PROCESS[name]}"))
        elif name in KNOWN_REPLICA_GAPS:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"replica gap: {KNOWN_REPLICA_GAPS[name]}"))
