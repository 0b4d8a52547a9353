"""docs/architecture.md's recipes, each done once from outside the package: a
sampler, a model with its estimator and command, a corpus format and a topic
placement, each added the way its recipe says and run through the engine (or
the CLI), so the recipes cannot drift from the code."""

from __future__ import annotations

import argparse
import numbers
import types
from dataclasses import asdict
from typing import Any, NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.rng import domains
from dscir.api.base import Estimator
from dscir.api.mixture_params import RUN
from dscir.api.params import config_values, declare
from dscir.params import Interval, Param, configuration
from dscir.cli import fit as fit_commands
from dscir.cli import main
from dscir.cli.command import add_fit_command, fit_from_flags
from dscir.corpus import Corpus, write_corpus
from dscir.engine.chain import Chain, run_chain
from dscir.engine.inprocess import InProcessExecutor
from dscir.models.base import ModelDefaults
from dscir.models.lda import LDAConfig, LDAModel
from dscir.rng import derive
from dscir.samplers import SAMPLERS, Sampler

N_DOCS, N_WORDS = 40, 30


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    counts = rng.poisson(rng.gamma(1.0, 1.0, N_WORDS), (N_DOCS, N_WORDS))
    path = str(tmp_path_factory.mktemp("recipes") / "corpus.zarr")
    write_corpus(path, sp.csr_matrix(counts), vocabulary=[f"w{i}" for i in range(N_WORDS)],
                 heldout={"every": 5})
    return path


def lda_config(**changes) -> LDAConfig:
    values = dict(n_topics=3, sampler="scir", alpha=0.1, beta=0.5, batch_size=8,
                  step_size=0.5, tau=None, kappa=0.0, sweeps=4, seed=3, burn_in=2, thin=1,
                  eval_sweeps=4, placement="driver", kernel="dense")
    return LDAConfig(**{**values, **changes})


def run_lda(store: str, config: LDAConfig, n_iter: int = 4) -> Chain:
    chain = Chain(LDAModel, config, store, InProcessExecutor(store, "lda"))
    run_chain(chain, n_iter, eval_every=n_iter, progress=False)
    return chain


# -- a sampler ------------------------------------------------------------------


class GammaState(NamedTuple):
    theta: np.ndarray

    @property
    def log_theta(self) -> np.ndarray:
        return np.log(self.theta)


def gamma_init(theta0) -> GammaState:
    return GammaState(np.array(theta0, dtype=np.float64))


STEPS: list[dict[str, Any]] = []


def gamma_step(state, prior, counts, step_size, key, temperature=1.0) -> GammaState:
    """theta ~ Gamma((prior + counts) / T, T): the expanded mean's conditional at T = 1."""
    STEPS.append({"prior": prior, "counts": counts, "key": key, "temperature": temperature})
    a = (np.broadcast_to(prior, counts.shape) + counts) / temperature
    draw = np.random.default_rng(key).gamma(a, temperature)
    return GammaState(np.maximum(draw, 5e-324))


def test_a_sampler_registered_as_the_recipe_says_runs_in_an_lda_chain(store, monkeypatch):
    """Guards the sampler recipe: a State with log_theta, init and step, one Sampler
    entry (its option as hyperparameters); the model picks it up by name, gives it
    the prior, the scaled counts and the stream (seed, SAMPLER, m, block) of its
    one vocabulary block, and the option reaches the step."""
    monkeypatch.setitem(SAMPLERS, "gamma", Sampler(
        "gamma", "the conditional Gamma draw", GammaState, gamma_init, gamma_step,
        row_totals=False, hyperparameters={"temperature": 1.0}))
    STEPS.clear()
    chain = run_lda(store, lda_config(sampler="gamma", sampler_options={"temperature": 2.0}))
    assert chain.iteration == 4 and chain.n_samples == 2
    assert isinstance(chain.model.topics.state_, GammaState)
    assert [s["key"] for s in STEPS] == [derive(3, domains.SAMPLER, m, 0) for m in range(4)]
    assert all(s["prior"] == 0.5 and s["temperature"] == 2.0 for s in STEPS)
    train_tokens = Corpus.open(store).read(Corpus.open(store).train_docs()).data.sum()
    for s in STEPS:  # a minibatch's counts scaled to the training documents
        assert s["counts"].shape == (3, N_WORDS)
        assert s["counts"].sum() == pytest.approx(train_tokens, rel=0.5)
    assert np.isfinite(chain.evaluations[-1].perplexity)


# -- a topic state ----------------------------------------------------------------


def test_a_topic_state_added_as_the_recipe_says_holds_the_topics(store, monkeypatch):
    """Guards the topic-state recipe: a TopicState class in TOPIC_STATES under a
    SCIR step's name is what LDAModel builds for that step, on the resolved
    placement's blocks; here one that keeps the dense maths, so its chain is the
    dense one bit for bit."""
    from dscir.models.lda import model, topics

    class CountedTopics(topics.Topics):
        steps = 0

        def step(self, executor, m, results, words, scale, h):
            CountedTopics.steps += 1
            return super().step(executor, m, results, words, scale, h)

    monkeypatch.setitem(model.TOPIC_STATES, "counted", CountedTopics)
    counted = run_lda(store, lda_config(scir_step="counted"))
    dense = run_lda(store, lda_config())
    assert isinstance(counted.model.topics, CountedTopics) and CountedTopics.steps == 4
    assert counted.model.placement == "driver" and counted.model.topics.blocks.in_process
    np.testing.assert_array_equal(counted.model.topics.mean_phi(), dense.model.topics.mean_phi())


# -- a corpus format ------------------------------------------------------------


def _triples_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--words", type=int, required=True, help="vocabulary size")


def _ingest_triples(args, **options):
    """Lines ``document word count`` (0-based ids) into a store."""
    rows = np.loadtxt(args.input, dtype=np.int64, ndmin=2)
    matrix = sp.csr_matrix((rows[:, 2], (rows[:, 0], rows[:, 1])),
                           shape=(rows[:, 0].max() + 1, args.words))
    return write_corpus(args.output, matrix, **options)


def test_a_corpus_format_listed_as_the_recipe_says_is_a_dscir_ingest_command(
        tmp_path, monkeypatch, capsys):
    """Guards the format recipe: a Format record (name, description, add_options,
    ingest) in the registry is ``dscir ingest <name>``, with the common flags."""
    from dscir.corpus import formats
    from dscir.corpus.formats.base import Format

    monkeypatch.setitem(formats.FORMATS, "triples", Format(
        "triples", "document word count lines", _triples_options, _ingest_triples))
    source = tmp_path / "counts.txt"
    source.write_text("0 1 2\n0 4 1\n1 0 3\n2 4 5\n3 2 1\n")
    out = str(tmp_path / "triples.zarr")
    assert main(["ingest", "triples", str(source), out, "--words", "6",
                 "--heldout-every", "2", "--quiet"]) == 0
    c = Corpus.open(out)
    assert (c.n_docs, c.n_words, int(c.meta["n_tokens"])) == (4, 6, 12)
    assert list(c.heldout_docs()) == [1, 3]
    batch = c.read(np.array([0]))
    assert dict(zip(batch.indices.tolist(), batch.data.tolist())) == {1: 2, 4: 1}


# -- a model, its estimator and its command ---------------------------------------


#: The model's parameters: UnigramConfig is made from them, the estimator takes them.
UNIGRAM: tuple[Param, ...] = (
    Param("beta", Interval(numbers.Real, 0, open_low=True), 0.5, "Dirichlet prior of phi."),
    Param("thin", Interval(numbers.Integral, 1), 10, "keep a sample every this many iterations."),
    Param("seed", Interval(numbers.Integral, 0), 0, "the chain's seed."),
)


@configuration(UNIGRAM)
class UnigramConfig:
    burn_in: int = 0
    sampler: str = "exact"
    batch_size: int = 0  # it sees all its documents each iteration

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def word_counts(batch, words, n_words):
    """A task: the part's count of each word (run where the part was read)."""
    return np.bincount(batch.indices, weights=batch.data, minlength=n_words)


class UnigramEvaluation(NamedTuple):
    iteration: int
    log_predictive: float


class UnigramModel(ModelDefaults):
    """One word distribution phi ~ Dirichlet(beta), drawn exactly from its posterior."""

    name, metric, Evaluation, minibatch = "unigram", "log_predictive", UnigramEvaluation, False

    def __init__(self, config, data, executor):
        self.config, self.data, self.executor = config, data, executor
        self.counts = self._counts(data.train)
        self.phi = np.full(data.n_words, 1.0 / data.n_words)
        self.phi_sum, self.n_kept = np.zeros(data.n_words), 0

    def _counts(self, docs) -> np.ndarray:
        parts = self.executor.read(docs)
        return sum(self.executor.run("counts", word_counts, parts,
                                     [(self.data.n_words,)] * len(parts.batches)))

    def step(self, m, parts):
        rng = np.random.default_rng(derive(self.config.seed, domains.SAMPLER, m))
        self.phi = rng.dirichlet(self.config.beta + self.counts)
        return {"n_docs": int(self.data.train.size)}

    def keep_sample(self, iteration):
        self.phi_sum += self.phi
        self.n_kept += 1
        return {"samples/phi": self.phi[None]}

    def score(self) -> float:
        held = self._counts(self.data.heldout)
        mean = self.phi_sum / self.n_kept if self.n_kept else self.phi
        return float(held @ np.log(mean) / held.sum())

    def evaluation_extras(self):
        return {}

    def state(self):
        return {"phi": self.phi}, {}

    def restore(self, arrays, values, samples):
        self.phi = arrays["phi"]

    def sample_rows(self):
        return {"samples/phi": self.n_kept}

    def run_arrays(self):
        return {"phi_mean": self.phi_sum / max(self.n_kept, 1)}

    def report_settings(self):
        return {}

    def progress(self, stats):
        return {}


def unigram_estimator():
    """The recipe's estimator of UnigramModel (defined when called: it registers itself)."""

    @declare
    class Unigram(Estimator):
        """A unigram model (one word distribution)."""

        _model_name = "unigram"
        _params = (*UNIGRAM, *RUN)

        def _make_config(self, store=None):
            return UnigramConfig(**config_values(self._params, self.get_params()),
                                 burn_in=self._burn_in())

        def _model_type(self, config):
            return UnigramModel

        def _collect(self, chain):
            super()._collect(chain)
            self.phi_ = chain.model.run_arrays()["phi_mean"]

        def _load(self, run):
            self.config_, self.phi_ = UnigramConfig(**run.config), run.phi_mean
            self.n_iter_ = run.iteration

        def heldout_report(self):
            return f"held-out log predictive {self.evaluations_[-1].log_predictive:.3f}"

    return Unigram


def test_a_model_added_as_the_recipe_says_fits_loads_and_has_a_command(
        store, tmp_path, monkeypatch, capsys):
    """Guards the model recipe: a model class with the Model members, an Estimator
    subclass (declared parameters, _make_config, _model_type, _collect, _load) that
    registers itself by _model_name, and a fit command; the engine and the run store
    are unchanged. The exact sampler's kept phi averages to the posterior mean."""
    from dscir.api import registry

    monkeypatch.setattr(registry, "ESTIMATORS", dict(registry.ESTIMATORS))
    Unigram = unigram_estimator()

    def add_fit_parser(models):
        add_fit_command(models, "unigram", Unigram._params, fit_unigram, top=3,
                        top_help="unused", help="unigram model", description="a unigram model")

    def fit_unigram(args):
        fit_from_flags(Unigram, Unigram._params, args, lambda m: f"{m.n_iter_} iterations")
        return 0

    monkeypatch.setattr(fit_commands, "FIT_MODELS",
                        (*fit_commands.FIT_MODELS, types.SimpleNamespace(
                            add_fit_parser=add_fit_parser)))
    run = str(tmp_path / "unigram-run")
    assert main(["fit", "unigram", store, "--iterations", "40", "--beta", "0.5", "--thin", "1",
                 "--eval-every", "40", "--out", run, "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "40 iterations" and "stopped after 40 iterations: the n_iter asked for" in out
    held_out = [line for line in out if line.startswith("held-out log predictive ")]
    assert len(held_out) == 1
    loaded = dscir.api.load(run)
    assert isinstance(loaded, Unigram) and loaded.n_iter_ == 40
    c = Corpus.open(store)
    train, held = (c.read(docs) for docs in (c.train_docs(), c.heldout_docs()))
    counts = np.bincount(train.indices, train.data, N_WORDS)
    exact = (0.5 + counts) / (0.5 * N_WORDS + counts.sum())
    # 20 kept draws of a Dirichlet with about a thousand tokens: sd of the mean < 0.003
    np.testing.assert_allclose(loaded.phi_, exact, atol=0.012)
    held_counts = np.bincount(held.indices, held.data, N_WORDS)
    score = float(held_out[0].split()[-1])
    assert score == pytest.approx(held_counts @ np.log(exact) / held_counts.sum(), abs=0.02)
    assert loaded.config_ == UnigramConfig(beta=0.5, seed=0, thin=1, burn_in=20)
