"""Several chains of one fit (``fit(..., n_chains=N)``, ``--chains N``): stored under one
run, chain 0 equal to the single chain of the seed, the same chains on 1 and 2
workers; ``diagnose`` / ``dscir diagnose`` and ``to_inference_data`` over them."""

from __future__ import annotations

import numpy as np
import pytest

from support.chains import topic_corpus
from dscir.api import LDA, DPMixture, load
from dscir.cli import main
from dscir.corpus import Corpus, split_heldout, write_corpus
from dscir.runs.chains import chain_path, chains_meta, open_chains
from dscir.runs.store import read_arrays

pytest.importorskip("arviz")

K, W = 3, 30
SETTINGS = dict(n_topics=K, batch_size=40, sweeps=6, n_iter=10, burn_in=4, thin=1,
                eval_sweeps=6, seed=3, progress=False)



@pytest.fixture(scope="module")
def runs(tmp_path_factory, one_worker, two_workers):
    root = tmp_path_factory.mktemp("chains")
    store = topic_corpus(root / "docs.zarr")
    # an opened store, as the CLI passes it (a path is the other form)
    LDA(**SETTINGS).fit(Corpus.open(store), client=one_worker, out=root / "one", n_chains=2)
    model = LDA(**SETTINGS).fit(store, client=two_workers, out=root / "two", n_chains=2)
    LDA(**SETTINGS).fit(store, client=one_worker, out=root / "single")
    return store, root, model


def test_same_chains_on_one_and_two_workers_and_chain_zero_is_the_single_chain(runs):
    _, root, model = runs
    assert chains_meta(root / "two")["n_chains"] == 2
    for c in range(2):
        one = read_arrays(chain_path(root / "one", c), "samples")
        two = read_arrays(chain_path(root / "two", c), "samples")
        assert one.keys() == two.keys() == {"phi", "iteration"}
        for name in one:
            np.testing.assert_array_equal(one[name], two[name])
    single = read_arrays(root / "single", "samples")
    chain0 = read_arrays(chain_path(root / "two", 0), "samples")
    chain1 = read_arrays(chain_path(root / "two", 1), "samples")
    np.testing.assert_array_equal(chain0["phi"], single["phi"])
    assert not np.array_equal(chain1["phi"], chain0["phi"])
    np.testing.assert_array_equal(model.topic_word_, load(root / "single").topic_word_)
    loaded = load(root / "two")
    assert loaded.n_chains_ == 2 and loaded.run_path_ == str(root / "two")
    np.testing.assert_array_equal(loaded.topic_word_, model.topic_word_)
    assert [r.config["seed"] for r in open_chains(root / "two")] == \
        chains_meta(root / "two")["seeds"]


def test_diagnose_rows_and_inference_data_are_the_aligned_samples(runs, one_worker):
    _, root, model = runs
    d = model.diagnose(one_worker, top=4)
    assert (d.model, d.n_chains, d.n_draws) == ("lda", 2, 6)
    assert [r.quantity for r in d.rows] == ["held-out score"] + [f"topic {k}" for k in range(K)]
    assert d.scores.shape == (2, 6) and np.all(d.scores < 0)
    assert all(np.isfinite(r.rhat) and r.ess > 0 for r in d.rows)
    assert all(len(r.note.split()) == 4 for r in d.rows[1:])
    idata = model.to_inference_data(d.scores)
    phi = idata.posterior["phi"]
    assert phi.dims == ("chain", "draw", "topic", "word")
    assert list(phi["word"].values) == [f"w{i}" for i in range(W)]
    assert list(phi["draw"].values) == list(range(5, 11))
    for c, perm in enumerate(d.perms):
        assert sorted(perm) == list(range(K))
        kept = read_arrays(chain_path(root / "two", c), "samples")["phi"]
        np.testing.assert_array_equal(phi.sel(chain=c).values, kept[:, perm])
    np.testing.assert_array_equal(idata.sample_stats["heldout_score"].values, d.scores)
    fig = model.plot_diagnostics(d)
    assert [len(ax.patches) for ax in fig.axes] == [len(d.rows)] * 2  # one bar per row


def test_dscir_diagnose_prints_the_table(runs, capsys, tmp_path):
    _, root, _ = runs
    assert main(["diagnose", str(root / "two"), "--no-score", "--top", "3",
                 "--plot", str(tmp_path / "d.png")]) == 0
    out = capsys.readouterr().out
    assert "lda run: 2 chains x 6 kept samples" in out and "R-hat" in out
    assert out.count("\ntopic ") == K
    assert (tmp_path / "d.png").stat().st_size > 0
    assert main(["topics", str(root / "two"), "--top", "2"]) == 0  # reads chain 0
    assert main(["verify", str(root / "two")]) == 0  # every chunk of every chain
    assert "chains/1/samples/phi" in capsys.readouterr().out


def test_bad_input_is_one_line(runs, capsys, tmp_path):
    store, root, _ = runs
    assert main(["diagnose", str(tmp_path / "nothing")]) == 2
    assert main(["fit", "lda", store, "--topics", "3", "--chains", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("dscir: error: ") for line in err), err
    assert "--chains N > 1 needs --out" in err[1]
    assert main(["diagnose", str(root / "two"), "--top", "0"]) == 2
    assert main(["fit", "lda", store, "--topics", "3", "--chains", "0",
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err  # argparse's usage line and error
    assert "argument --top: must be >= 1, got 0" in err
    assert "argument --chains: must be >= 1, got 0" in err
    assert not (tmp_path / "r").exists()


def test_dp_mixture_chains_diagnose_alpha_clusters_and_score(tmp_path, one_worker):
    from support.mixtures import synthetic_mixture

    x, _ = synthetic_mixture(120, seed=0)
    store = tmp_path / "users.zarr"
    write_corpus(store, x, vocabulary=[f"i{j}" for j in range(x.shape[1])])
    split_heldout(store, fraction=0.2, seed=0)
    model = DPMixture("gibbs", n_iter=12, burn_in=4, thin=1, seed=1, progress=False)
    model.fit(store, out=tmp_path / "run", n_chains=2)
    d = model.diagnose(one_worker)
    assert [r.quantity for r in d.rows] == ["held-out score", "alpha", "clusters"]
    assert d.scores.shape == (2, 8) and np.all(np.isfinite(d.scores))
    idata = model.to_inference_data()
    assert idata.posterior["alpha"].dims == ("chain", "draw")
    np.testing.assert_array_equal(idata.posterior["n_clusters"].values[1],
                                  read_arrays(chain_path(tmp_path / "run", 1),
                                              "samples")["n_components"])


def test_chains_side_by_side_each_have_a_named_progress_bar(tmp_path, capsys):
    """Each chain's bar says which chain it is (and has its own line), so bars of
    chains run side by side are not one unreadable line."""
    from support.mixtures import synthetic_mixture

    x, _ = synthetic_mixture(60, seed=0)
    store = tmp_path / "users.zarr"
    write_corpus(store, x, vocabulary=[f"i{j}" for j in range(x.shape[1])])
    split_heldout(store, fraction=0.2, seed=0)
    DPMixture("gibbs", n_iter=3, burn_in=1, thin=1, seed=1).fit(store, out=tmp_path / "run",
                                                                n_chains=2)
    err = capsys.readouterr().err
    assert "(gibbs) chain 0" in err and "(gibbs) chain 1" in err
