"""Dask clusters shared by the test modules (process workers, one thread each)."""

from __future__ import annotations

import pytest
from distributed import Client, LocalCluster


def _cluster(n_workers: int):
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="session")
def one_worker():
    yield from _cluster(1)


@pytest.fixture(scope="session")
def two_workers():
    yield from _cluster(2)
