"""Compute a run's report on the cluster and write it (``dscir report RUN STORE``).

The held-out score against passes and seconds with the run's stop marked
(``dscir.api.convergence``, inline SVG). On one cluster: the coherence of each
topic's top words over the store
(UMass, NPMI and C_v from one scan of it, ``dscir.models.lda.coherence``), the
convergence diagnostics when the run has several chains
(``dscir.api.diagnose``), and pyLDAvis's view when pyLDAvis is installed
(``dscir.api.pyldavis``). The page is written to a temporary sibling and
renamed into place, so a failure leaves no half-written report.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from dscir.errors import DscirError, spell
from dscir.report.page import LDAvisView, render

MEASURES = ("u_mass", "c_npmi", "c_v")


def check_report(run: str | Path, store: str, out: str | Path, overwrite: bool = False,
                 top: int = 10):
    """The fitted LDA of ``run`` once every argument is checked (one clear error
    otherwise), before any cluster starts."""
    from dscir.api import load
    from dscir.api.registry import estimator_class

    out = Path(out)
    if out.exists() and not overwrite:
        raise DscirError(f"{out} exists; pass {spell('overwrite=True', '--overwrite')} to "
                         "replace it")
    if out.is_dir():
        raise DscirError(f"{out} is a directory, not a file for the report")
    if not out.resolve().parent.is_dir():
        raise DscirError(f"cannot write {out}: {out.resolve().parent} is not a directory")
    model = load(run)
    estimator_class(model._model_name, "_reportable", "a report")
    model.check_coherence(store, top=top)
    return model


def _ldavis(model, store: str, client, sweeps) -> tuple[LDAvisView | None, str]:
    from dscir.api import pyldavis as vis

    try:
        module = vis.pyldavis()
    except DscirError as exc:
        return None, f"No pyLDAvis view: {exc}."
    from pyLDAvis import urls

    tmp = tempfile.mkdtemp(prefix="dscir-report-")
    try:
        data = model.to_pyldavis(store, client, out=os.path.join(tmp, "topics.zarr"),
                                 sweeps=sweeps)
        prepared = data.prepare()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    read = lambda p: Path(p).read_text(encoding="utf-8")  # noqa: E731
    view = LDAvisView(prepared.to_json(), read(urls.D3_LOCAL), read(urls.LDAVIS_LOCAL),
                      read(urls.LDAVIS_CSS_LOCAL))
    return view, f"pyLDAvis {module.__version__}, topics numbered as in dscir (from 0)."


def write_report(run: str | Path, store: str, out: str | Path, client=None, *,
                 top: int = 10, score: bool = False, pyldavis: bool = True,
                 sweeps: int | None = None, overwrite: bool = False) -> Path:
    """Write the report page of LDA ``run`` over corpus ``store`` to ``out``."""
    from dscir.api import fitted
    from dscir.api.diagnose import diagnose
    from dscir.api.session import executor_for, session
    from dscir.corpus import Corpus
    from dscir.models.lda import coherence as coh
    from dscir.runs.chains import open_chains

    model = check_report(run, store, out, overwrite, top)
    n_chains = len(open_chains(run))
    n_docs = Corpus.open(store).n_docs
    with session(client) as cl:
        coh.check_top(top, model.topic_word_.shape[1])
        top_ids = fitted.top_ids(model.topic_word_, top)
        with executor_for("lda", store, cl, resident=True) as ex:
            counts = coh.count(ex, np.arange(n_docs, dtype=np.int64), top_ids)
        values = {m: coh.coherence(counts, m, top).per_topic for m in MEASURES}
        diagnosis, why = None, ("One chain: fit with --chains 4 (n_chains=4) to compare "
                                "chains by R-hat and ESS.")
        if n_chains > 1:
            diagnosis = diagnose(run, cl, score=score)
        view, note = (_ldavis(model, store, cl, sweeps) if pyldavis
                      else (None, "pyLDAvis view not asked for (--no-pyldavis)."))
    from dscir.api.convergence import convergence_svgs

    plots, stop_note = convergence_svgs(model, int(Corpus.open(store).train_docs().size))
    table = model.top_words_table(top)
    topics = [[(str(w), float(p)) for w, p in words] for _, words in table.rows]
    cfg = model.config_
    page = render(
        title=f"dscir LDA report: {Path(run).name}",
        summary=[f"run {Path(run).resolve()} ({n_chains} chain{'s' * (n_chains > 1)}; "
                 f"the topics are chain 0's)",
                 f"{cfg.n_topics} topics, sampler {cfg.sampler}, {model.n_iter_} iterations, "
                 f"{model.n_samples_} kept samples, seed {cfg.seed}",
                 f"corpus store {store}: {n_docs} documents, {len(model.vocabulary_)} words"],
        topics=topics, coherence=values,
        coherence_note=(f"Coherence of each topic's top {top} words over all {n_docs} "
                        f"documents of the store (whole-document co-occurrence; higher is "
                        f"more coherent): {', '.join(MEASURES)}."),
        diagnosis=diagnosis, diagnosis_note=why, ldavis=view, ldavis_note=note,
        trace_plots=plots, stop_note=stop_note)
    out = Path(out)
    tmp = out.parent / f".{out.name}.partial"
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out
