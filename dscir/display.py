"""What a fitted model shows in a notebook: trace plots and tables of top words.

Presentation only: everything here reads the estimators' learned attributes
(``history_``, ``evaluations_``, ``topic_word_``, ...), never the cluster.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np


class TopicTable:
    """Top words of each topic (or cluster) with their probabilities.

    Renders as an HTML table in Jupyter and as aligned text elsewhere;
    ``rows`` holds (index, [(word, probability), ...]) in display order.
    """

    def __init__(self, rows: list[tuple[int, list[tuple[str, float]]]], label: str = "topic"):
        self.rows = rows
        self.label = label

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, vocabulary: Sequence[str], n: int,
                    order: Sequence[int] | None = None, label: str = "topic") -> TopicTable:
        """The ``n`` largest entries of each row of a rows x words probability matrix."""
        matrix = np.asarray(matrix)
        top = np.argsort(-matrix, axis=1, kind="stable")[:, :n]
        return cls.from_top(np.take_along_axis(matrix, top, axis=1), top, vocabulary, order,
                            label)

    @classmethod
    def from_top(cls, values: np.ndarray, ids: np.ndarray, vocabulary: Sequence[str],
                 order: Sequence[int] | None = None, label: str = "topic") -> TopicTable:
        """The table of each row's largest entries given as their ``values`` and word
        ``ids`` [rows, n] (largest first)."""
        rows = range(ids.shape[0]) if order is None else order
        return cls([(int(k), [(str(vocabulary[w]), float(v)) for w, v in zip(ids[k], values[k])])
                    for k in rows], label)

    def to_pandas(self):
        """One row per topic, one column per rank, cells "word (p)" (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(
            {f"{i + 1}": [f"{w[i][0]} ({w[i][1]:.3f})" if i < len(w) else "" for _, w in self.rows]
             for i in range(max((len(w) for _, w in self.rows), default=0))},
            index=pd.Index([k for k, _ in self.rows], name=self.label))

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        width = len(str(max((k for k, _ in self.rows), default=0)))
        return "\n".join(f"{self.label} {k:>{width}}: " + " ".join(w for w, _ in words)
                         for k, words in self.rows)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = f"<tr><th>{html.escape(self.label)}</th><th style='text-align:left'>top words</th></tr>"
        body = "".join(
            f"<tr><td>{k}</td><td style='text-align:left'>"
            + " ".join(f"<span title='{p:.4f}'>{html.escape(w)}</span>" for w, p in words)
            + "</td></tr>"
            for k, words in self.rows)
        return f"<table>{head}{body}</table>"


def _axes(ax, n: int, title: str):
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(1, n, figsize=(4.2 * n, 3.4), layout="constrained")
    else:
        ax = np.asarray(ax).ravel()
        if ax.size != n:
            raise ValueError(f"plot needs {n} axes, got {ax.size}")
        fig = ax[0].figure
    fig.suptitle(title)
    return fig, np.asarray(ax).ravel()


#: The first panel of a fit that scored nothing.
NO_SCORE = ("no held-out score: fit with eval_every=N\n(a store with held-out documents)\n"
            "to score every N iterations")


def _fit_axes(ax, suptitle: str, evaluations: list, score: str, **labels):
    """A fit's three axes, the first with the held-out ``score`` of each evaluation."""
    fig, axes = _axes(ax, 3, suptitle)
    if evaluations:
        axes[0].plot([e.iteration for e in evaluations],
                     [getattr(e, score) for e in evaluations], "o-")
    else:  # eval_every=0, the default, or a store without held-out documents
        axes[0].text(0.5, 0.5, NO_SCORE, ha="center", va="center", wrap=True,
                     transform=axes[0].transAxes, fontsize=9)
    axes[0].set(xlabel="iteration", **labels)
    return fig, axes


def plot_lda(history: dict[str, np.ndarray], evaluations: list, title: str, ax=None):
    """Held-out perplexity, throughput and the time split per iteration of an LDA fit."""
    fig, (a, b, c) = _fit_axes(ax, title, evaluations, "perplexity",
                               ylabel="held-out perplexity", title="document completion")
    it = history["iteration"]
    b.plot(it, history["n_docs"] / history["wall"], lw=1, label="documents/s")
    b.set(xlabel="iteration", ylabel="documents / s", title="throughput")
    b2 = b.twinx()
    b2.plot(it, history["n_tokens"] / history["wall"], lw=1, color="C1", label="tokens/s")
    b2.set_ylabel("tokens / s")
    b.legend(handles=b.get_lines() + b2.get_lines(), loc="lower right", fontsize=8)
    c.stackplot(it, history["compute"], history["transfer"], history["queue"],
                history["update"],
                labels=["compute (critical path)", "transfer (first start, last stop)",
                        "queueing and idle", "driver update"], alpha=0.8)
    c.set(xlabel="iteration", ylabel="seconds", title="time per iteration")
    c.legend(loc="upper right", fontsize=8)
    return fig


def plot_dpmm(history: dict[str, np.ndarray], evaluations: list, title: str, ax=None):
    """Held-out log predictive, occupied clusters and alpha of a DP mixture fit."""
    fig, (a, b, c) = _fit_axes(ax, title, evaluations, "log_predictive",
                               ylabel="nats / user", title="held-out log predictive")
    it = history["iteration"]
    b.plot(it, history["n_clusters"], lw=1, label="occupied")
    b.plot(it, history["n_components"], lw=1, label="represented")
    b.set(xlabel="iteration", ylabel="components", title="clusters")
    b.legend(fontsize=8)
    c.plot(it, history["alpha"], lw=1)
    c.set(xlabel="iteration", ylabel="alpha", title="DP concentration")
    return fig


def plot_diagnosis(diagnosis, ax=None):
    """R-hat (with the 1.01 and 1.1 marks) and bulk ESS of each quantity of a
    ``dscir.api.diagnose.Diagnosis``, one bar per row."""
    d = diagnosis
    fig, (a, b) = _axes(ax, 2, f"{d.model}: {d.n_chains} chains x {d.n_draws} kept samples")
    names = [r.quantity for r in d.rows]
    y = np.arange(len(names))
    a.barh(y, [r.rhat - 1.0 for r in d.rows], left=1.0)
    for x, style in ((1.01, ":"), (1.1, "--")):
        a.axvline(x, color="k", ls=style, lw=1)
    a.set(yticks=y, yticklabels=names, xlabel="rank-normalised split R-hat (worst of a row)",
          title="R-hat (1: chains agree)")
    a.invert_yaxis()
    b.barh(y, [r.ess for r in d.rows], color="C2")
    b.set(yticks=y, yticklabels=names, xlabel="bulk effective sample size (smallest of a row)",
          title="ESS")
    b.invert_yaxis()
    return fig
