"""Fixtures shared by the test modules: Dask clusters (process workers, one thread each),
small stored corpora, and a `dask scheduler`/`dask worker` cluster over TCP."""

from __future__ import annotations

import pytest
from distributed import Client, LocalCluster

from dscir.corpus import split_heldout, write_corpus
from support.daskprocs import DASK, dask_processes
from support.lda import W as LDA_W, synthetic_lda
from support.mixtures import W as MIXTURE_W, synthetic_mixture
from support.zipf import W as ZIPF_W, zipf_counts


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


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory):
    """A stored LDA corpus with K_TRUE known topics (support.lda) and 10% held out."""
    counts, phi = synthetic_lda(300, 60, seed=1)
    path = tmp_path_factory.mktemp("lda") / "synthetic.zarr"
    write_corpus(path, counts, vocabulary=[f"w{i}" for i in range(LDA_W)], chunk_docs=64)
    split_heldout(path, every=10)
    return str(path), phi


@pytest.fixture(scope="session")
def zipf_store(tmp_path_factory):
    """200 documents of 100 Zipf-drawn words (support.zipf), every 10th held out."""
    counts = zipf_counts()
    path = tmp_path_factory.mktemp("zipf") / "zipf.zarr"
    write_corpus(path, counts, vocabulary=[f"w{i}" for i in range(ZIPF_W)], chunk_docs=64)
    split_heldout(path, every=10)
    return str(path), counts


@pytest.fixture(scope="module")
def dpmm_store(tmp_path_factory):
    """A stored mixture of 4 multinomials (support.mixtures), every 6th user held out."""
    x, truth = synthetic_mixture(720, seed=5)
    path = tmp_path_factory.mktemp("dpmm") / "mixture.zarr"
    write_corpus(path, x, vocabulary=[f"area{i}" for i in range(MIXTURE_W)], chunk_docs=64)
    split_heldout(path, every=6)
    return str(path), truth


@pytest.fixture(scope="module")
def tcp_cluster(tmp_path_factory):
    """The address of a `dask scheduler` with two `dask worker` processes over TCP."""
    if DASK is None:
        pytest.skip("the `dask` command is not installed")
    with dask_processes(tmp_path_factory.mktemp("tcp"), 2) as address:
        assert address.startswith("tcp://")
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
