"""``dscir topics RUN``, ``dscir evaluate RUN [STORE]`` (a run of any model),
``dscir coherence RUN [STORE]`` and ``dscir transform RUN STORE --out DOC_TOPICS``
(an LDA run)."""

from __future__ import annotations

import argparse

from dscir.cli import convention, options
from dscir.cli.lda import print_topics
from dscir.errors import DscirError


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help="held-out score of a fitted run on a store "
                        "(LDA: perplexity; mixtures: log predictive per user)")
    convention.positional(ev, "run", "a fitted run (written by `dscir fit ... --out RUN`)")
    convention.positional(ev, "store", "corpus store (default: the run's own)", nargs="?")
    ev.add_argument("--sweeps", type=convention.count(2), help="LDA: Gibbs sweeps for "
                    "document completion (default: the run's eval_sweeps)")
    options.cluster_options(ev)
    ev.set_defaults(func=_evaluate)

    tp = sub.add_parser("topics", help="top words of each topic (or cluster) of a fitted run")
    convention.positional(tp, "run", "a fitted run (written by `dscir fit ... --out RUN`)")
    tp.add_argument("--top", type=convention.count(1), default=10,
                    help="words per topic (or cluster)")
    tp.set_defaults(func=_topics)

    co = sub.add_parser("coherence", help="topic coherence of an LDA run's top words over a "
                        "store (whole-document co-occurrence)")
    convention.positional(co, "run", "a fitted LDA run")
    convention.positional(co, "store", "reference corpus store, with the run's vocabulary "
                          "(default: the run's own); every document is counted", nargs="?")
    co.add_argument("--measure", default="u_mass",
                    help="u_mass (default), c_uci, c_npmi or c_v")
    co.add_argument("--top", type=convention.count(2), default=10,
                    help="top words per topic")
    co.add_argument("--window", default="document",
                    help="co-occurrence window: only 'document' (the default: a store holds "
                    "bags of words, so sliding windows cannot be computed)")
    options.cluster_options(co)
    co.set_defaults(func=_coherence)

    tr = sub.add_parser("transform", help="topic proportions of every document of a store "
                        "under a fitted LDA run, on the cluster (restartable)")
    convention.positional(tr, "run", "a fitted LDA run")
    convention.positional(tr, "store", "corpus store over the run's vocabulary")
    convention.out_option(tr, "new Zarr group for the 'topics' array (rerun with the same "
                          "--out to resume an interrupted transform)", required=True,
                          metavar="DOC_TOPICS")
    tr.add_argument("--sweeps", type=convention.count(2), help="Gibbs sweeps per document "
                    "(default: the run's eval_sweeps)")
    tr.add_argument("--spread", action="store_true", help="also write 'topics_sd': the "
                    "standard deviation of the proportions across the run's kept phi samples")
    options.cluster_options(tr)
    tr.set_defaults(func=_transform)


def _evaluate(args: argparse.Namespace) -> int:
    from dscir.api import LDA, load
    from dscir.corpus import Corpus

    options.cluster_kwargs(args)  # bad TLS options: an error before anything is read
    model = load(args.run)
    if args.sweeps is not None and not isinstance(model, LDA):
        raise DscirError("--sweeps applies to LDA runs; a mixture's score has none")
    store = args.store or model.store_
    Corpus.open(store)  # a missing store is an error before a cluster starts
    with options.cluster(args) as client:
        if not args.json:
            print(model.heldout_report(store, client=client, sweeps=args.sweeps))
            return 0
        convention.print_json({"run": args.run, **_heldout(model, store, client, args.sweeps)})
    return 0


def _heldout(model, store: str, client, sweeps) -> dict:
    """``dscir evaluate --json``'s result."""
    from dscir.api import LDA
    from dscir.corpus import Corpus

    if isinstance(model, LDA):
        metric, value = "perplexity", model.perplexity(store, client=client, sweeps=sweeps)
    else:
        metric, value = "log_predictive", model.score(store, client=client)
    return {"store": store, "metric": metric, "value": value,
            "heldout_docs": int(Corpus.open(store).heldout_docs().size)}


def _topics(args: argparse.Namespace) -> int:
    from dscir.api import load

    model = load(args.run)
    if not args.json:
        print_topics(model, args.top)
        return 0
    table = model.top_words_table(args.top)
    convention.print_json({"run": args.run, "label": table.label, "topics": [
        {"id": k, "words": [w for w, _ in words], "probabilities": [p for _, p in words]}
        for k, words in table.rows]})
    return 0


def _coherence(args: argparse.Namespace) -> int:
    from dscir.api import LDA, load
    from dscir.errors import DscirError
    from dscir.models.lda import coherence as coh

    options.cluster_kwargs(args)  # bad TLS options: an error before anything is read
    coh.check_measure(args.measure)
    coh.check_window(args.window)
    model = load(args.run)
    if not isinstance(model, LDA):
        raise DscirError(f"{args.run} is not an LDA run; coherence scores LDA topics")
    # a bad --top, a missing store or one with another vocabulary: before a cluster
    store, _, ids = model.check_coherence(args.store, measure=args.measure, top=args.top)
    with options.cluster(args) as client:
        result = model.coherence(store, client=client, measure=args.measure, top=args.top,
                                 window=None)
    words = [[str(model.vocabulary_[w]) for w in row] for row in ids]
    if args.json:
        convention.print_json({
            "run": args.run, "store": store, "measure": result.measure, "top": result.top,
            "n_docs": result.n_docs, "mean": result.mean,
            "topics": [{"id": k, "coherence": v, "words": words[k]}
                       for k, v in enumerate(result.per_topic)]})
        return 0
    width = len(str(len(words) - 1))
    for k, value in enumerate(result.per_topic):
        shown = "undefined" if value != value else f"{value:.4f}"
        print(f"topic {k:>{width}}: {shown:>9}  " + " ".join(words[k]))
    undefined = int(sum(v != v for v in result.per_topic))
    note = f", {undefined} undefined topics skipped" if undefined else ""
    print(f"mean {result.measure} coherence: {result.mean:.4f} ({len(words)} topics, top "
          f"{result.top} words, whole-document co-occurrence over {result.n_docs} documents "
          f"of {store}{note})")


def _transform(args: argparse.Namespace) -> int:
    from dscir.api import LDA, load
    from dscir.api.transform import check_transform

    options.cluster_kwargs(args)  # bad TLS options: an error before anything is read
    model = load(args.run)
    if not isinstance(model, LDA):
        raise DscirError(f"{args.run} is a {type(model).__name__} run; `dscir transform` "
                         "needs an LDA run")
    check_transform(model, args.store)  # a bad store is an error before a cluster starts
    if args.spread:
        from dscir.api.transform import phi_samples

        phi_samples(model)
    with options.cluster(args) as client:
        topics = model.transform(args.store, client=client, out=args.out, sweeps=args.sweeps,
                                 spread=args.spread)
    arrays = "arrays 'topics', 'topics_sd'" if args.spread else "array 'topics'"
    print(f"topic proportions of {topics.shape[0]} documents x {topics.shape[1]} topics "
          f"written to {args.out} ({arrays})")
    return 0


def print_progress(path: str) -> int:
    """``dscir info`` of an unfinished run: how far it got, and how to continue it."""
    import time

    from dscir.runs.progress import Progress

    p = Progress.open(path)
    print(f"run:         {path} ({p.model}, unfinished: still running, or interrupted and "
          f"resumable with the same `dscir fit {p.model}` command and --resume {path})")
    if p.store is not None:
        print(f"corpus:      {p.store}")
    planned = f" of {p.n_iter:,}" if p.n_iter is not None else ""
    if p.iteration is None:
        print(f"iterations:  no checkpoint yet{planned}; checkpoints {p.cadence()}")
    else:
        written = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(p.written))
        print(f"iterations:  {p.iteration:,}{planned} at the latest checkpoint (written "
              f"{written}); checkpoints {p.cadence()}")
    last = f" (the last at iteration {p.last_sample:,})" if p.last_sample is not None else ""
    print(f"samples:     {p.n_samples:,} kept{last}")
    if p.config:
        print("settings:    " + ", ".join(f"{k}={v}" for k, v in p.config.items()))
    ev = p.evaluations
    for name in (k for k in ev if k != "iteration"):
        for i, value in zip(ev.get("iteration", []), ev[name]):
            print(f"{name}:  {value:.6g} at iteration {i}")
    return 0
