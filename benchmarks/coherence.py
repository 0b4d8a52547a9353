"""dscir's topic coherence against gensim's ``CoherenceModel`` on the same topics and corpus.

For Reuters and AP (the shared corpora): ingest into a temporary store, fit a
short SCIR LDA on a LocalCluster, take each topic's top 10 words, then score
them with ``LDA.coherence`` (counted on the cluster) and with gensim 4.4 on the
same documents (texts = each document's bag of words laid out in word-id order).
gensim's ``c_uci``/``c_npmi``/``c_v`` get ``window_size`` = the longest
document, so every document is one window: whole-document co-occurrence, as
dscir computes. ``u_mass`` differs by definition (dscir: Mimno et al.'s
+1 smoothing, gensim: + 1e-12 on the probability); the column
``dscir counts, gensim formula`` recomputes gensim's u_mass from dscir's
cluster counts to show the counts agree.

Writes results/coherence.json.

    python benchmarks/coherence.py
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, cpu_model, shared_data  # noqa: E402

import dscir  # noqa: E402
from dscir.api.session import executor_for  # noqa: E402
from dscir.cli import main  # noqa: E402
from dscir.corpus import Corpus  # noqa: E402
from dscir.engine.cluster import dask_client  # noqa: E402
from dscir.models.lda import coherence as coh  # noqa: E402

TOP = 10
MEASURES = ("u_mass", "c_uci", "c_npmi", "c_v")
CORPORA = {  # name: (ldac file, vocabulary file, topics, iterations)
    "reuters": ("reuters/reuters.ldac", "reuters/reuters.tokens", 10, 200),
    "ap": ("ap/ap.dat", "ap/vocab.txt", 20, 200),
}


def gensim_umass_from_counts(counts: coh.Counts) -> np.ndarray:
    """gensim's u_mass formula, log((D(w_i, w_j)/n + 1e-12) / (D(w_j)/n)), pairs i > j."""
    n = float(counts.n_docs)
    i, j = np.tril_indices(counts.doc_freq.shape[1], -1)
    vals = np.log((counts.pair_freq[:, i, j] / n + coh.EPSILON) / (counts.doc_freq[:, j] / n))
    return vals.mean(axis=1)


def gensim_values(store: str, topics: list[list[str]], measure: str) -> np.ndarray:
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    c = Corpus.open(store)
    vocab = [str(v) for v in c.vocabulary]
    batch = c.read(np.arange(c.n_docs))
    bow, texts = [], []
    for d in range(c.n_docs):
        a, b = batch.indptr[d], batch.indptr[d + 1]
        ids, cnt = batch.indices[a:b].tolist(), batch.data[a:b].tolist()
        bow.append(list(zip(ids, cnt)))
        texts.append([vocab[w] for w, k in zip(ids, cnt) for _ in range(k)])
    dictionary = Dictionary.from_corpus(bow, id2word=dict(enumerate(vocab)))
    if measure == "u_mass":
        cm = CoherenceModel(topics=topics, corpus=bow, dictionary=dictionary,
                            coherence="u_mass", topn=TOP, processes=1)
    else:
        window = max(len(t) for t in texts)
        cm = CoherenceModel(topics=topics, texts=texts, dictionary=dictionary,
                            coherence=measure, topn=TOP, window_size=window, processes=1)
    return np.asarray(cm.get_coherence_per_topic(), np.float64)


def finite(values) -> list:
    """Floats for JSON: an undefined (NaN) topic value becomes null."""
    return [None if math.isnan(v) else float(v) for v in values]


def run_corpus(name: str, tmp: Path, client) -> dict:
    ldac, vocab, k, n_iter = CORPORA[name]
    data = shared_data()
    store = str(tmp / f"{name}.zarr")
    assert main(["ingest", "ldac", str(data / ldac), store, "--vocab", str(data / vocab)]) == 0
    model = dscir.LDA(n_topics=k, n_iter=n_iter, progress=False, seed=1)
    model.fit(store, client=client)
    ids = coh.top_word_ids(model.topic_word_, TOP)
    topics = [[str(model.vocabulary_[w]) for w in row] for row in ids]
    with executor_for("lda", store, client, resident=True) as executor:
        counts = coh.count(executor, np.arange(Corpus.open(store).n_docs), ids)
    rows = []
    for measure in MEASURES:
        start = time.perf_counter()
        ours = model.coherence(client=client, measure=measure, top=TOP)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        theirs = gensim_values(store, topics, measure)
        t_theirs = time.perf_counter() - start
        row = dict(measure=measure, dscir_mean=ours.mean, gensim_mean=float(theirs.mean()),
                   max_abs_diff=float(np.max(np.abs(ours.per_topic - theirs))),
                   dscir_seconds=round(t_ours, 3), gensim_seconds=round(t_theirs, 3),
                   dscir_per_topic=finite(ours.per_topic), gensim_per_topic=finite(theirs))
        if measure == "u_mass":
            g = gensim_umass_from_counts(counts)
            row["dscir_counts_gensim_formula_max_abs_diff"] = float(np.max(np.abs(g - theirs)))
        rows.append(row)
        print(f"{name} {measure}: dscir {ours.mean:.6f} gensim {theirs.mean():.6f} "
              f"max |diff| per topic {row['max_abs_diff']:.3g}", flush=True)
    return dict(corpus=name, n_docs=ours.n_docs, n_words=int(model.topic_word_.shape[1]),
                n_topics=k, iterations=n_iter, top=TOP, topics=topics, rows=rows)


def main_() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    import gensim

    out = {"machine": {"cpu": cpu_model(), "python": platform.python_version(),
                       "gensim": gensim.__version__, "dscir": dscir.__version__},
           "corpora": []}
    with tempfile.TemporaryDirectory() as tmp, dask_client(n_workers=2) as client:
        for name in CORPORA:
            out["corpora"].append(run_corpus(name, Path(tmp), client))
    path = RESULTS / "coherence.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main_()
