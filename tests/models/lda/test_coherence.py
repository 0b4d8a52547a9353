"""Topic coherence (UMass, UCI, NPMI, C_v) over a reference store, counted on Dask,
against a brute-force computation on the dense document-word matrix."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.api import LDA
from dscir.cli import main
from dscir.corpus import write_corpus
from dscir.errors import DscirError
from dscir.models.lda import coherence as coh

W, K, N_DOCS = 30, 5, 70
EPS = 1e-12
MEASURES = ("u_mass", "c_uci", "c_npmi", "c_v")


def small_corpus(seed: int = 4) -> np.ndarray:
    """Dense counts: 3 loose word groups so pairs co-occur unevenly, an empty document
    and a word (W - 1) that no document contains."""
    rng = np.random.default_rng(seed)
    x = np.zeros((N_DOCS, W), np.int64)
    for d in range(N_DOCS):
        group = rng.integers(3)
        p = np.full(W - 1, 0.2)
        p[10 * group: 10 * group + 9] += 3.0
        x[d, :W - 1] = rng.multinomial(int(rng.integers(3, 15)), p / p.sum())
    x[7] = 0
    return x


def fake_fit(store: str, seed: int = 5) -> LDA:
    """An LDA with random topics, as if fitted on ``store``; the last topic ranks the
    absent word W - 1 first, so its coherence is undefined."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(W, 0.3), size=K)
    phi[K - 1, W - 1] = 2.0
    phi /= phi.sum(axis=1, keepdims=True)
    model = LDA(n_topics=K)
    model.topic_word_, model.store_ = phi, store
    model.vocabulary_ = np.array([f"w{i}" for i in range(W)])
    return model


def brute_force(x: np.ndarray, phi: np.ndarray, measure: str, top: int) -> list[float]:
    """Each topic's coherence by explicit loops over the top words' pairs."""
    b = x > 0
    n = x.shape[0]
    out = []
    for k in range(phi.shape[0]):
        words = sorted(range(phi.shape[1]), key=lambda w: (-phi[k, w], w))[:top]
        df = lambda a: int(b[:, a].sum())  # noqa: E731
        co = lambda a, c: int((b[:, a] & b[:, c]).sum())  # noqa: E731
        if any(df(w) == 0 for w in words):
            out.append(math.nan)
            continue

        def npmi(a, c):
            pmi = math.log((co(a, c) / n + EPS) / (df(a) / n * df(c) / n))
            return pmi / -math.log(co(a, c) / n + EPS)

        vals = []
        if measure == "u_mass":
            for i in range(top):
                for j in range(i):
                    vals.append(math.log((co(words[i], words[j]) + 1) / df(words[j])))
        elif measure in ("c_uci", "c_npmi"):
            for i in range(top):
                for j in range(top):
                    if i == j:
                        continue
                    a, c = words[i], words[j]
                    pmi = math.log((co(a, c) / n + EPS) / (df(a) / n * df(c) / n))
                    vals.append(pmi if measure == "c_uci" else npmi(a, c))
        else:
            vec = [[npmi(a, c) for c in words] for a in words]
            s = [sum(vec[i][j] for i in range(top)) for j in range(top)]
            for v in vec:
                dot = sum(p * q for p, q in zip(v, s))
                vals.append(dot / (math.sqrt(sum(p * p for p in v)) *
                                   math.sqrt(sum(q * q for q in s))))
        out.append(sum(vals) / len(vals))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    x = small_corpus()
    path = tmp_path_factory.mktemp("coherence") / "ref.zarr"
    write_corpus(path, sp.csr_matrix(x), vocabulary=[f"w{i}" for i in range(W)],
                 chunk_docs=16)
    return str(path), x


@pytest.mark.parametrize("measure", MEASURES)
def test_counts_and_measures_match_brute_force_in_process(store, measure):
    path, x = store
    from dscir.engine.inprocess import InProcessExecutor

    model = fake_fit(path)
    top_ids = coh.top_word_ids(model.topic_word_, 6)
    counts = coh.count(InProcessExecutor(path, "lda"), np.arange(N_DOCS), top_ids, block_docs=25)
    b = (x > 0).astype(np.int64)
    for k in range(K):
        sub = b[:, top_ids[k]]
        assert np.array_equal(counts.pair_freq[k], sub.T @ sub)
        assert np.array_equal(counts.doc_freq[k], sub.sum(axis=0))
    got = coh.measure_values(counts, measure)
    np.testing.assert_allclose(got, brute_force(x, model.topic_word_, measure, 6),
                               rtol=0, atol=1e-12)
    assert np.isnan(got[K - 1]) and not np.isnan(got[:K - 1]).any()


@pytest.mark.parametrize("measure", MEASURES)
def test_same_on_one_and_two_workers(store, one_worker, two_workers, measure):
    path, x = store
    model = fake_fit(path)
    one = model.coherence(client=one_worker, measure=measure, top=7)
    two = model.coherence(path, client=two_workers, measure=measure, top=7)
    want = brute_force(x, model.topic_word_, measure, 7)
    np.testing.assert_allclose(one.per_topic, want, rtol=0, atol=1e-12)
    assert np.array_equal(one.per_topic, two.per_topic, equal_nan=True)  # exact counts
    assert one.mean == two.mean == pytest.approx(np.nanmean(want), abs=1e-12)
    assert (one.measure, one.top, one.n_docs) == (measure, 7, N_DOCS)


def test_umass_conditions_on_the_higher_ranked_word():
    """Fails if the UMass pairs are taken in the wrong order, i.e. if the sum runs over
    log((D(w_i, w_j) + 1) / D(w_i)) conditioning on the lower-ranked word w_i (giving
    log(3/2) here) instead of on the higher-ranked w_j (log(3/4)); also fails if the
    +1 smoothing is dropped (log(2/4))."""
    # word a (rank 1) in 4 documents, b (rank 2) in 2, both together in 2
    counts = coh.Counts(5, np.array([[4, 2]]), np.array([[[4, 2], [2, 2]]]))
    assert coh.measure_values(counts, "u_mass")[0] == math.log(3 / 4)


def test_bad_arguments_are_errors(store):
    path, _ = store
    model = fake_fit(path)
    with pytest.raises(DscirError, match="unknown coherence measure"):
        model.coherence(measure="c_w2v")
    with pytest.raises(DscirError, match="bag of words"):
        model.coherence(measure="c_npmi", window=10)
    with pytest.raises(DscirError, match="at least 2 top words"):
        model.coherence(top=1)


@pytest.fixture(scope="module")
def run(store, two_workers, tmp_path_factory):
    path, _ = store
    out = tmp_path_factory.mktemp("coherence-run") / "run.zarr"
    LDA(n_topics=3, batch_size=10, n_iter=2, sweeps=4, burn_in=0, thin=1,
        progress=False).fit(path, client=two_workers, out=out)
    return str(out)


def test_cli_prints_per_topic_values_and_the_mean(store, run, two_workers, capsys):
    path, x = store
    address = two_workers.scheduler.address
    assert main(["coherence", run, "--measure", "c_npmi", "--top", "5",
                 "--address", address]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    topic_lines = [ln for ln in lines if ln.startswith("topic ")]
    assert len(topic_lines) == 3 and len(topic_lines[0].split()) == 3 + 5
    model = LDA.load(run)
    want = model.coherence(client=two_workers, measure="c_npmi", top=5)
    assert lines[-1].startswith(f"mean c_npmi coherence: {want.mean:.4f} (3 topics, top 5")
    assert f"over {N_DOCS} documents" in lines[-1]
    np.testing.assert_allclose(want.per_topic,
                               brute_force(x, model.topic_word_, "c_npmi", 5), atol=1e-12)
    assert main(["coherence", run, "--measure", "c_npmi", "--top", "5", "--json",
                 "--address", address]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["measure"], answer["top"], answer["n_docs"]) == ("c_npmi", 5, N_DOCS)
    np.testing.assert_allclose([t["coherence"] for t in answer["topics"]], want.per_topic)
    assert [len(t["words"]) for t in answer["topics"]] == [5, 5, 5]


@pytest.mark.parametrize("extra, message", [
    (["--measure", "c_w2v"], "unknown coherence measure"),
    (["--window", "10"], "sliding windows cannot be computed"),
    (["OTHER"], "another vocabulary"),
])
def test_cli_errors_are_one_line(store, run, two_workers, tmp_path, capsys, extra, message):
    if extra == ["OTHER"]:
        other = tmp_path / "other.zarr"
        write_corpus(other, sp.csr_matrix(small_corpus(seed=9)),
                     vocabulary=[f"v{i}" for i in range(W)])
        extra = [str(other)]
    code = main(["coherence", run, *extra, "--address", two_workers.scheduler.address])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("dscir: error:")
    assert message in err[0]
