"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .support.postgres import REQUIRE_ENV, PostgresCluster, find_bin_dir, postgres_cluster


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
