"""The example notebook runs top to bottom (small setting) on a LocalCluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.data import DATA

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.skipif(not (DATA / "wiki").is_dir(), reason="shared wiki corpus not present")
def test_lda_wiki_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("DSCIR_EXAMPLE_SMALL", "1")
    monkeypatch.setenv("DSCIR_SHARED_DATA", str(DATA))
    nb = nbformat.read(EXAMPLES / "lda_wiki.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "7961 documents, 6130 words, 2844630 tokens, 200 held out" in text
    assert "held-out perplexity as the run reported it: [(10," in text
    assert "dscir page:" in text and "/dscir/" in text
    rich = [o.get("data", {}) for o in outputs if o.output_type in ("display_data", "execute_result")]
    assert any("image/png" in d for d in rich), "model.plot() drew no figure"
    tables = [d["text/html"] for d in rich if "text/html" in d and "top words" in d["text/html"]]
    assert tables and tables[0].count("<tr>") == 21  # header + 20 topics
    assert sum(line.startswith("document ") for line in text.splitlines()) == 3


def test_lda_wiki_notebook_runs_without_the_shared_corpus(tmp_path, monkeypatch):
    """Without the wiki corpus, examples/lda_wiki.ipynb says so and runs on the packaged
    Reuters sample instead of failing on a missing file."""
    monkeypatch.setenv("DSCIR_EXAMPLE_SMALL", "1")
    monkeypatch.setenv("DSCIR_SHARED_DATA", str(tmp_path / "no-data"))
    nb = nbformat.read(EXAMPLES / "lda_wiki.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "no wiki corpus found (set DSCIR_SHARED_DATA): using the packaged Reuters" in text
    assert "395 documents, 4258 words, 84010 tokens, 39 held out" in text
    assert "held-out perplexity as the run reported it: [(10," in text


def test_quickstart_notebook_runs_on_the_packaged_sample(tmp_path, monkeypatch):
    """examples/quickstart.ipynb needs no shared data: the Reuters sample ships with dscir."""
    monkeypatch.setenv("DSCIR_EXAMPLE_SMALL", "1")
    nb = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "395 documents, 4258 words, 84010 tokens" in text and "39 documents held out" in text
    assert "held-out perplexity: " in text and "mean NPMI coherence of the topics: " in text
    rich = [o.get("data", {}) for o in outputs if o.output_type in ("display_data", "execute_result")]
    assert any("image/png" in d for d in rich), "model.plot() drew no figure"
    tables = [d["text/html"] for d in rich if "text/html" in d and "top words" in d["text/html"]]
    assert tables and tables[0].count("<tr>") == 11  # header + 10 topics
    assert sum(line.startswith("document ") for line in text.splitlines()) == 3


def test_own_text_dp_mixture_notebook_runs(tmp_path, monkeypatch):
    """examples/own_text_dp_mixture.ipynb: a CSV ingested as raw text, clustered by the DP mixture."""
    monkeypatch.setenv("DSCIR_EXAMPLE_SMALL", "1")
    nb = nbformat.read(EXAMPLES / "own_text_dp_mixture.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert text.startswith("id,text\n0,") and "395 documents, " in text
    assert "occupied clusters: " in text and "held-out log predictive per document (nats): -" in text
    rich = [o.get("data", {}) for o in outputs if o.output_type in ("display_data", "execute_result")]
    assert any("image/png" in d for d in rich), "model.plot() drew no figure"
    assert any("text/html" in d and "<tr>" in d["text/html"] for d in rich)


def test_diagnostics_report_notebook_runs(tmp_path, monkeypatch):
    """examples/diagnostics_report.ipynb: several chains, R-hat/ESS, the report page."""
    pytest.importorskip("arviz")
    monkeypatch.setenv("DSCIR_EXAMPLE_SMALL", "1")
    nb = nbformat.read(EXAMPLES / "diagnostics_report.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "['0', '1', 'zarr.json']" in text and "lda run: 2 chains x 7 kept samples" in text
    assert "held-out score" in text and sum(line.startswith("topic ") for line in text.splitlines()) == 10
    assert "report.html True" in text
    rich = [o.get("data", {}) for o in outputs if o.output_type == "display_data"]
    assert any("image/png" in d for d in rich), "plot_diagnostics drew no figure"
