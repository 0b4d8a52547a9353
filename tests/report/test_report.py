"""pyLDAvis's arrays over a store on the cluster, and ``dscir report`` opened in a real
headless browser (Debian's Chromium; skipped with a message where none is installed)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.api import LDA
from dscir.cli import main
from dscir.corpus import split_heldout, write_corpus

K, W = 3, 30
VOCAB = [f"word{i}" for i in range(W)]


def matrix(n_docs: int = 150) -> sp.csr_matrix:
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(W, 0.1), K)
    rows = np.array([rng.multinomial(rng.integers(5, 40), rng.dirichlet(np.full(K, 0.3)) @ topics)
                     for _ in range(n_docs)])
    rows[7] = 0  # an empty document
    return sp.csr_matrix(rows)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, one_worker):
    """A two-chain LDA run on a store of 150 documents in blocks of 16."""
    root = tmp_path_factory.mktemp("report")
    store = root / "docs.zarr"
    write_corpus(store, matrix(), vocabulary=VOCAB, chunk_docs=16)
    split_heldout(store, fraction=0.1, seed=0)
    model = LDA(n_topics=K, batch_size=40, sweeps=6, n_iter=10, burn_in=4, thin=1,
                eval_sweeps=6, seed=1, progress=False)
    model.fit(store, client=one_worker, out=root / "run", n_chains=2)
    return str(store), root, model


def test_pyldavis_arrays_equal_in_memory_counts_and_transform(fitted, one_worker, tmp_path):
    pytest.importorskip("pyLDAvis")
    store, _, model = fitted
    x = matrix()
    data = model.to_pyldavis(store, one_worker, out=tmp_path / "topics")
    np.testing.assert_array_equal(data.doc_lengths, np.asarray(x.sum(axis=1)).ravel())
    np.testing.assert_array_equal(data.term_frequency, np.asarray(x.sum(axis=0)).ravel())
    theta = model.transform(x).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(data.doc_topic_dists, theta / theta.sum(1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(data.topic_term_dists.sum(axis=1), 1.0)
    assert data.vocab == VOCAB and data.doc_topic_dists.shape == (150, K)
    prepared = data.prepare()
    assert list(prepared.topic_order) == list(range(K))  # dscir's order, unsorted


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium here: the report page is checked in a real headless browser "
                "(apt-get install chromium; .ci/run installs it where apt is available)")


def rendered_dom(page, tmp_path) -> str:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
           page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_page_in_headless_chromium(fitted, tmp_path, capsys):
    pytest.importorskip("pyLDAvis")
    store, root, model = fitted
    page = tmp_path / "report.html"
    assert main(["report", str(root / "run"), store, "--out", str(page), "--workers", "1",
                 "--top", "5"]) == 0
    static = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", static)  # self-contained
    dom = rendered_dom(page, tmp_path)
    # the page's own script ran: it replaced the status text and counted the topics
    assert f'id="dscir-status">showing {K} of {K} topics<' in dom
    for words in model.top_words(5):
        for w in words:
            assert f">{w} <small>" in dom
    assert 'id="diagnostics"' in dom and dom.count("<td>topic ") == K
    # pyLDAvis's script drew its view: an SVG whose term labels are the vocabulary's
    ldavis = dom[dom.index('id="ldavis"'):]
    assert "<svg" in ldavis and 'class="terms"' in ldavis
    assert any(f">{w}</text>" in ldavis for w in VOCAB)


def test_report_without_pyldavis_and_bad_input(fitted, tmp_path, capsys, monkeypatch):
    from dscir.api import pyldavis as vis
    from dscir.errors import DscirError

    store, root, _ = fitted

    def missing():
        raise DscirError("the pyLDAvis view needs pyLDAvis: pip install 'dscir[pyldavis]'")

    monkeypatch.setattr(vis, "pyldavis", missing)
    page = tmp_path / "plain.html"
    assert main(["report", str(root / "run"), store, "--out", str(page), "--workers", "1"]) == 0
    text = page.read_text()
    assert "No pyLDAvis view" in text and 'id="ldavis"' not in text
    assert "stopped at iteration 10: it ran the n_iter iterations asked for" in text
    assert main(["report", str(root / "run"), store, "--out", str(page)]) == 2  # exists
    assert main(["report", str(root / "run"), str(tmp_path / "none.zarr"), "--out",
                 str(tmp_path / "x.html")]) == 2
    other = tmp_path / "other.zarr"
    write_corpus(other, matrix(20), vocabulary=[f"other{i}" for i in range(W)])
    assert main(["report", str(root / "run"), str(other), "--out", str(tmp_path / "y.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("dscir: error: ")]
    assert len(errors) == 3 and "exists" in errors[0] and "vocabulary" in errors[2], err
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "y.html").exists()
