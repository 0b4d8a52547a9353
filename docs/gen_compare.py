"""The page "Compared with gensim, tomotopy and scikit-learn" (docs/compare.md),
written from benchmarks/results/.

    python docs/gen_compare.py     # rewrites docs/compare.md

Every number of the page is a ``Cell``: a value read from one result file at
one path of keys, shown beside the file's name, the machine it ran on, the
corpus and what its clock covered. The site's build writes the page again from
the results (docs/hooks.py), and tests/test_docs.py checks that the committed
page is the one this module writes and that each cell holds its file's number.
The capability table is the one part not measured: each row says where its
facts come from.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "docs" / "compare.md"

#: dscir's default fit against tomotopy: the corpora, and the session whose runs
#: are shown, named by what their recorded commands hold (a file may be renamed)
USER_CORPORA = ("ap", "kos", "wiki", "news")
USER_SESSION = "--tag _s61"
#: every library on one corpus (peers.py): file, corpus, and whether budgets are shown
PEER_FILES = (
    ("peers_ap_default.json", "AP newswire", True),
    ("peers_wiki.json", "Wikipedia sample", True),
    ("peers_big.json", "One pass over a generated corpus", False),
)
#: dscir's mixtures against scikit-learn's KMeans on labelled text (benchmarks/mixtures.py)
MIXTURE_FILES = tuple(f"mixtures_default_seed{seed}.json" for seed in (0, 1, 2))
NAMES = {"dscir-scir": "dscir (SCIR)", "dscir-sgrld": "dscir (SGRLD)",
         "dscir-gsgrhmc": "dscir (gSGRHMC)", "gensim": "gensim LdaModel",
         "sklearn": "scikit-learn LatentDirichletAllocation", "tomotopy": "tomotopy LDAModel",
         "lda": "lda (collapsed Gibbs)"}
PASSES = ("gensim", "sklearn")  # their budgets count passes over the corpus, not iterations


def _load(results: Path, name: str) -> dict:
    return json.loads((results / name).read_text())


def user_files(results: Path = RESULTS) -> dict[str, str]:
    """Each corpus's result file of the session ``USER_SESSION``: the one file
    ``peers_user*.json`` whose command names that corpus and session."""
    found = {}
    for corpus in USER_CORPORA:
        names = [p.name for p in sorted(results.glob("peers_user*.json"))
                 if f"--corpus {corpus} " in _load(results, p.name).get("command", "")
                 and USER_SESSION in _load(results, p.name)["command"]]
        if len(names) != 1:
            raise SystemExit(f"{len(names)} results of peers_user --corpus {corpus} "
                             f"{USER_SESSION} in {results}: {names}")
        found[corpus] = names[0]
    return found


def walk(record, path: tuple):
    """The value at ``path`` in a result: keys, list indices, and ``system=NAME``
    for the element of a list of records whose ``system`` is NAME."""
    for key in path:
        if isinstance(key, str) and key.startswith("system="):
            record = next(r for r in record if r.get("system") == key[len("system="):])
        else:
            record = record[key]
    return record


@dataclass(frozen=True)
class Cell:
    """One number of the page: its value, the result file and the path it came from,
    and the decimals it is shown with."""
    value: float
    source: str
    path: tuple
    decimals: int = 0

    @property
    def text(self) -> str:
        return f"{self.value:,.{self.decimals}f}"


class Reader:
    """Cells read from the result files of one directory; keeps every cell it made."""

    def __init__(self, results: Path = RESULTS):
        self.results = results
        self.cells: list[Cell] = []
        self.strings: list[str] = []  # the text read from the files (versions, commands)
        self._files: dict[str, dict] = {}

    def file(self, name: str) -> dict:
        if name not in self._files:
            self._files[name] = _load(self.results, name)
        return self._files[name]

    def get(self, name: str, *path):
        value = walk(self.file(name), path)
        if isinstance(value, str):
            self.strings.append(value)
        return value

    def cell(self, name: str, *path, decimals: int = 0) -> str:
        found = Cell(float(self.get(name, *path)), name, path, decimals)
        self.cells.append(found)
        return found.text

    def machine(self, name: str) -> str:
        cpu = self.get(name, "machine", "cpu")
        cores = self.cell(name, "machine", "cores")
        note = self.get(name, "machine", "note") if "note" in self.get(name, "machine") else ""
        return f"{cpu}, {cores} cores" + (f" ({note})" if note else "")

    def corpus(self, name: str) -> str:
        docs = self.cell(name, "corpus", "n_docs")
        words = self.cell(name, "corpus", "n_words")
        tokens = self.cell(name, "corpus", "n_tokens")
        held = self.cell(name, "corpus", "n_heldout")
        return (f"{docs} documents, {words} words, {tokens} tokens; "
                f"{held} documents held out for the perplexity")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows] + [""])


def user_row(read: Reader, corpus: str, name: str) -> list[str]:
    """dscir's default fit and tomotopy's 200 iterations on one corpus."""
    summary = read.get(name, "summary")
    if summary.get("time_to_tomotopy_200") is not None:
        reach = read.cell(name, "summary", "time_to_tomotopy_200", decimals=1)
    else:
        last = read.cell(name, "systems", "system=dscir-scir", "points", -1, "seconds",
                         decimals=1)
        iterations = read.cell(name, "systems", "system=dscir-scir", "points", -1, "budget")
        reach = f"not reached in {last} ({iterations} iterations)"
    return [f"{corpus} ({read.cell(name, 'corpus', 'n_docs')} docs)",
            read.cell(name, "summary", "default_fit", "seconds", decimals=1),
            read.cell(name, "summary", "default_fit", "perplexity"),
            read.cell(name, "systems", "system=dscir-fit", "peak_pss_mb"),
            read.cell(name, "summary", "tomotopy_200_seconds", decimals=1),
            read.cell(name, "summary", "tomotopy_200_perplexity"),
            read.cell(name, "systems", "system=tomotopy", "peak_pss_mb"),
            reach, f"`{name}`"]


def user_section(read: Reader, files: dict[str, str]) -> list[str]:
    first = next(iter(files.values()))
    k = read.cell(first, "settings", "K")
    n = read.cell(first, "settings", "tomotopy_budgets", -1)
    tomotopy = read.get(first, "versions", "tomotopy")
    rows = [user_row(read, corpus, name) for corpus, name in files.items()]
    out = [
        "## A default fit, as a user runs it: dscir against tomotopy", "",
        f"`dscir.LDA(n_topics={k}, seed=0).fit(store)` with every other setting at its "
        f"default, against tomotopy {tomotopy}'s `LDAModel` (K = {k}, {n} iterations on "
        "all cores), alternating in one session per corpus. "
        "dscir's clock covers the whole `fit` call, the embedded cluster's start-up "
        "included; tomotopy's covers its training (the mean of its two runs). The last "
        "column is the training time dscir's default chain takes to reach tomotopy's "
        "final perplexity. Memory is the peak PSS of each run's process tree.",
        "",
    ]
    out += table(["corpus", "dscir default fit (s)", "dscir perplexity", "dscir peak MB",
                  f"tomotopy {n} iterations (s)", "tomotopy perplexity", "tomotopy peak MB",
                  "dscir to tomotopy's perplexity (s)", "result file"], rows)
    out += [reading(read, files), "", f"Machine: {read.machine(first)}.", ""]
    return out


def reading(read: Reader, files: dict[str, str]) -> str:
    """What the table says, from its numbers: where dscir's default fit ends below
    tomotopy's perplexity, and the range of its time over tomotopy's."""
    ratio = ("summary", "default_fit", "seconds_ratio")
    below = [c for c, n in files.items()
             if read.get(n, "summary", "default_fit", "perplexity_ratio") < 1]
    low = min(files.values(), key=lambda n: read.get(n, *ratio))
    high = max(files.values(), key=lambda n: read.get(n, *ratio))
    its = ("summary", "default_fit", "iterations")
    fewest = min(files.values(), key=lambda n: read.get(n, *its))
    most = max(files.values(), key=lambda n: read.get(n, *its))
    where = ("every corpus" if len(below) == len(files)
             else ", ".join(below) if below else "no corpus")
    return (f"dscir's default fit (n_iter=\"auto\": {read.cell(fewest, *its)} to "
            f"{read.cell(most, *its)} iterations) ends below tomotopy's perplexity "
            f"on {where}, and takes {read.cell(low, *ratio, decimals=1)} to "
            f"{read.cell(high, *ratio, decimals=1)} times tomotopy's time.")


def peer_row(read: Reader, name: str, system: str, budgets: bool) -> list[str]:
    key = "system=" + system
    version = read.get(name, "versions", system.split("-")[0])
    row = [f"{NAMES.get(system, system)} {version}"]
    if budgets:
        unit = "passes" if system in PASSES else "iterations"
        row.append(f"{read.cell(name, 'systems', key, 'points', -1, 'budget')} {unit}")
    return row + [read.cell(name, "summary", "rows", key, "final"),
                  read.cell(name, "summary", "rows", key, "final_seconds", decimals=1),
                  read.cell(name, "summary", "rows", key, "peak_pss_mb")]


def peers_section(read: Reader, name: str, title: str, budgets: bool) -> list[str]:
    systems = [s["system"] for s in read.get(name, "summary", "rows")]
    rows = [peer_row(read, name, system, budgets) for system in systems]
    header = (["library"] + (["trained for"] if budgets else [])
              + ["perplexity", "training (s)", "peak MB"])
    k = read.cell(name, "settings", "K")
    policy = read.get(name, "settings", "dscir").get("policy", "reference")
    title += (", dscir's default policy" if policy == "default"
              else ", dscir's reference sampler settings")
    alpha = read.cell(name, "settings", "peer_alpha", decimals=1)
    eta = read.cell(name, "settings", "peer_eta", decimals=2)
    return ([f"### {title}, K = {k}", "",
             f"Corpus `{read.get(name, 'corpus', 'name')}`: {read.corpus(name)}. "
             f"The peers' priors: alpha {alpha}, eta {eta}. Machine: {read.machine(name)}. "
             f"From `{name}` (`{read.get(name, 'command')}`).", ""]
            + table(header, rows))


def peers_sections(read: Reader, files=PEER_FILES) -> list[str]:
    out = [
        "## Every library on one corpus", "",
        "Each library trains in its own subprocess on the same training documents "
        "(`benchmarks/peers.py`); the clock covers training only (no data loading, model "
        "construction, cluster start-up or scoring). The perplexity is that of the last "
        "snapshot, the time its training time. "
        "Memory is the peak PSS of the process tree (dscir's Dask workers and gensim's "
        "worker processes included).", "",
    ]
    for name, title, budgets in files:
        out += peers_section(read, name, title, budgets)
    return out


def mixture_row(read: Reader, name: str, corpus: str) -> list[str]:
    """One corpus and seed: each mixture's NMI (clusters) and seconds, and KMeans's NMI."""
    runs = ("corpora", corpus, "runs")

    def fit(model: str) -> list[str]:
        return [f"{read.cell(name, *runs, model, 'nmi', decimals=3)} "
                f"({read.cell(name, *runs, model, 'clusters')})",
                read.cell(name, *runs, model, "seconds", decimals=1)]

    seed = read.get(name, "command").split("--seed ")[1].split()[0]
    return ([f"`{corpus}`", seed] + fit("dpmixture") + fit("mixture")
            + [read.cell(name, *runs, "kmeans", "nmi", decimals=3), f"`{name}`"])


def mixtures_section(read: Reader, files=MIXTURE_FILES) -> list[str]:
    first = files[0]
    corpora = list(read.get(first, "corpora"))
    shapes = "; ".join(
        f"`{c}`: {read.cell(first, 'corpora', c, 'n_docs')} documents, "
        f"{read.cell(first, 'corpora', c, 'n_words')} words, "
        f"{read.cell(first, 'corpora', c, 'labels')} labels" for c in corpora)
    rows = [mixture_row(read, name, c) for c in corpora for name in files]
    out = [
        "## Clustering labelled text: dscir's mixtures against scikit-learn's KMeans", "",
        "`DPMixture(seed=s).fit(store)` and `Mixture(n_clusters=K, seed=s).fit(store)` "
        "with every other setting at its default (K the number of labels), against "
        "scikit-learn's `KMeans` with K clusters on the tf-idf rows, each scored by the "
        "normalised mutual information (NMI) of its clusters with the labels (higher is "
        "better; the clusters found in brackets). dscir's clock covers the whole `fit` "
        "call on the embedded cluster, its start-up included. The corpora "
        f"(`benchmarks/mixtures.py`): {shapes}.", "",
    ]
    out += table(["corpus", "seed", "DPMixture NMI (clusters)", "DPMixture (s)",
                  "Mixture(K) NMI (clusters)", "Mixture(K) (s)", "KMeans NMI", "result file"],
                 rows)
    commands = "; ".join(f"`{read.get(name, 'command')}`" for name in files)
    return out + [f"Machine: {read.get(first, 'cpu')}, {read.cell(first, 'cores')} cores. "
                  f"Commands: {commands}.", ""]


CORPUS_NAMES = {"newsgroups": "20 Newsgroups", "reuters8": "Reuters R8",
                "fortunes": "fortunes", "tomatoes": "Rotten Tomatoes"}


def loo_tables(name: str, results: Path = RESULTS) -> str:
    """The two tables of a ``benchmarks/mixtures.py --loo`` result (the policy guide's
    ``<!-- dscir-loo: FILE -->``, filled by docs/hooks.py): per corpus left out, the
    mean NMI of each value over the seeds, the value the other corpora choose and
    its margin over k-means; then every seed's fit."""
    result = _load(results, name)
    param, corpora = result["param"], result["corpora"]
    values = [f"{v:g}" for v in result["values"]]

    def kmeans(corpus: dict) -> float:
        return sum(r["kmeans"]["nmi"] for r in corpus["seeds"].values()) / len(corpus["seeds"])

    chosen = [[CORPUS_NAMES.get(c, c), f"{kmeans(corpora[c]):.3f}"]
              + [f"{corpora[c]['mean_nmi'][v]:.3f}" for v in values]
              + [f"{o['value']:g}", f"{o['nmi']:.3f}", f"{o['margin']:+.3f}"]
              for c, o in result["loo"].items()]
    runs = [[CORPUS_NAMES.get(c, c), seed]
            + [f"{fit['nmi']:.3f} ({fit['clusters']}), {fit['seconds']:.1f} s"
               for fit in (r[f"{param}={v}"] for v in values)]
            + [f"{r['kmeans']['nmi']:.3f}"]
            for c in corpora for seed, r in corpora[c]["seeds"].items()]
    label = [f"{param}={v}" for v in values]
    return "\n".join(
        table(["corpus left out", "k-means"] + label
              + ["chosen on the others", "its NMI", "margin over k-means"], chosen)
        + [f"Per seed (NMI, clusters, seconds of the whole call; `{name}`):", ""]
        + table(["corpus", "seed"] + label + ["k-means"], runs))


CAPABILITIES = (
    ("Inference", "stochastic-gradient MCMC on minibatches (SCIR, SGRLD, gSGRHMC, SGLD, SGHMC)",
     "online variational Bayes", "collapsed Gibbs sampling",
     "online or batch variational Bayes",
     "the libraries' documentation"),
    ("Runs on a cluster of machines", "yes: any Dask cluster (SSH, SLURM, PBS, Kubernetes, "
     "TLS; [Clusters](guide/clusters.md))", "`LdaModel(distributed=True)` (Pyro4)",
     "no: threads of one process (`train(workers=)`)",
     "not by itself: joblib processes (`n_jobs`)", "each library's signatures"),
    ("Posterior samples", "yes: kept samples, several chains, R-hat and ESS "
     "([Evaluating](guide/evaluate.md))", "no: a variational approximation",
     "one: the chain's current state (snapshots between `train` calls are up to you)", "no: a variational approximation",
     "the inference each uses"),
    ("Exact near the sparse boundary", "SCIR: no discretisation error at any step size "
     "([Samplers](samplers.md))", "not applicable (variational)",
     "no step size to discretise (collapsed Gibbs)", "not applicable (variational)",
     "the SCIR paper (Baker et al.); the inference each uses"),
    ("Same seed, same result on any number of workers", "yes, tested "
     "([Reliability](guide/reliability.md))", "not checked",
     "no: it warns \"The training result may differ even with fixed seed if `workers` != 1\"",
     "not checked", "tomotopy's own warning"),
    ("GPU", "{gpu}", "no", "no (SIMD builds on CPUs)", "no",
     "the packages' code; dscir's from `LDA`'s declared `device` values"),
    ("New documents after a fit", "`partial_fit` (LDA and both mixtures); a corpus larger than "
     "the cluster's memory streams from its Zarr store", "`update` (online)",
     "no: `add_doc` is refused after `train`; `infer` scores new documents",
     "`partial_fit` (online)", "each library's API"),
    ("Mixture and other models", "a Dirichlet-process and a finite mixture of multinomials",
     "HDP, dynamic topic models", "HDP, CTM, DMR, DTM, PA, HPA, sLDA, labelled LDA and more",
     "Gaussian and Bayesian Gaussian mixtures", "each library's model list"),
    ("scikit-learn estimator (pipelines, grid search)", "yes", "no", "no", "yes",
     "[Using a model](guide/using.md#with-scikit-learn)"),
)


def dscir_gpu() -> str:
    """dscir's GPU cell, read from LDA's parameter declarations so it follows the code."""
    from dscir.api.lda_params import PARAMS

    devices = next((getattr(p.constraint, "values", ()) for p in PARAMS
                    if p.name == "device"), ())
    if "cuda" in devices:
        return "LDA's minibatch Gibbs tasks on NVIDIA GPUs (`LDA(device=\"cuda\")`)"
    return "no (numba kernels on CPUs)"


def capabilities_section(read: Reader) -> list[str]:
    versions = read.get(PEER_FILES[0][0], "versions")
    header = ["", "dscir", f"gensim {versions['gensim']}", f"tomotopy {versions['tomotopy']}",
              f"scikit-learn {versions['sklearn']}", "from"]
    return (["## What each can and cannot do", "",
             "The versions are those of the measurements below. \"Not checked\" means "
             "neither this project's tests nor the library's documentation settle it.", ""]
            + table(header, [[cell.format(gpu=dscir_gpu()) for cell in row]
                             for row in CAPABILITIES]))


INTRO = """# Compared with gensim, tomotopy and scikit-learn

<!-- written by docs/gen_compare.py from benchmarks/results/; do not edit by hand -->

Which LDA library should you use? This page puts dscir beside the three a
Python user would pick instead. {fastest}dscir is for what the others do not
do: a fit spread over a Dask cluster, posterior samples with convergence
diagnostics, an exact sampler near the sparse boundary, the same chain on any
number of workers, Dirichlet-process and finite mixtures, and scikit-learn's
API. The last section clusters labelled text with dscir's mixtures beside
scikit-learn's KMeans.

Every number below is read from a result file under `benchmarks/results/`
when the site is built, and each table names its file, machine, corpus and
what its clock covered. Perplexity is the held-out document-completion
perplexity of one scorer applied to every library's topics (lower is
better); memory is the peak proportional set size (PSS) in MB.
"""


def fastest(read: Reader) -> str:
    """The opening's one comparison, when every result where tomotopy ran says so."""
    for name in user_files(read.results).values():
        if read.get(name, "summary", "default_fit", "seconds_ratio") <= 1:
            return ""
    for name, _, _ in PEER_FILES:
        rows = read.get(name, "summary", "rows")
        if any(r["system"] == "tomotopy" for r in rows) and min(
                rows, key=lambda r: r["final_seconds"])["system"] != "tomotopy":
            return ""
    return ("On one small machine tomotopy (collapsed Gibbs in C++) has the shortest "
            "training in every table below where it ran, and dscir's default fit takes "
            "many times its time. ")


def page(results: Path = RESULTS) -> tuple[str, Reader]:
    """The page's Markdown, and the reader holding every number on it (``cells``)
    and the text it read from the files (``strings``)."""
    read = Reader(results)
    lines = ([INTRO.format(fastest=fastest(read))] + capabilities_section(read)
             + user_section(read, user_files(results)) + peers_sections(read, PEER_FILES)
             + mixtures_section(read, MIXTURE_FILES))
    return "\n".join(lines).rstrip() + "\n", read


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.out.write_text(page()[0])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
