"""Write the benchmark pages of the documentation from benchmarks/results/.

    python docs/gen_benchmarks.py [--out docs/benchmarks]

One Markdown page per benchmark of the suite (the script that wrote the
results), and an index grouped by the user's question each answers
(``QUESTIONS``). A page holds the script's own description (its module
docstring), then for each result file: the command and the machine it records,
its figure (the PNG of the same name, served from benchmarks/results/ by
docs/hooks.py) and its contents as tables. Nothing on a page is typed by hand:
rerun this after a benchmark writes new results (tests/test_docs.py checks that
the committed pages are what this script writes).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
OUT = ROOT / "docs" / "benchmarks"

#: top-level keys describing where and how a result was taken, shown first
META = ("command", "machine", "cpu", "cores", "n_cpus", "commit", "ran_from", "python",
        "versions")
MAX_LIST = 12  # longer lists of numbers are summarised (length, first, last)
MAX_DEPTH = 4

#: The suite: each user's question and the scripts that answer it, in the index's
#: order. A script not listed here is indexed under "Other benchmarks".
QUESTIONS = {
    "How does dscir compare with the tools users would pick instead?": ["peers", "coherence"],
    "How far does a fit scale, in time and memory?": ["scale", "out_of_core", "gpu"],
    "How do the mixtures cluster text, against k-means?": ["mixtures"],
    "When does a default fit stop, and is the rule right on corpora it was not chosen on?":
        ["stopping"],
    "Do the samplers reproduce the papers' figures?": ["scir_fig3a", "dpmm_msweb", "ma_fig3"],
    "How close are the samplers to the exact posterior?": ["dirichlet_study", "lazy_scir"],
    "How fast are the kernels and the ingestion?": ["lda_kernel", "ingest"],
    "Does a fit survive failures?": ["soak"],
}


def scripts() -> dict[str, str]:
    """Each benchmark script's name and the first paragraph of its docstring."""
    found = {}
    for path in sorted(BENCHMARKS.glob("*.py")):
        if path.name.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
        found[path.stem] = doc
    return found


def study_of(stem: str, result: dict, names: dict[str, str]) -> str:
    """The script that wrote a result: the one its command names, else the
    longest script name the file name starts with."""
    command = result.get("command") if isinstance(result, dict) else None
    if isinstance(command, str):
        for name in re.findall(r"([A-Za-z0-9_]+)\.py\b", command):
            if name in names:
                return name
    prefixes = [n for n in names if stem == n or stem.startswith(n + "_")]
    return max(prefixes, key=len) if prefixes else "other"


def fmt(value) -> str:
    """One table cell."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return format(value, ".4g")
    if isinstance(value, (int, str)):
        text = str(value)
    elif isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        if len(value) > MAX_LIST:
            text = f"{len(value)} values: {fmt(value[0])} ... {fmt(value[-1])}"
        else:
            text = "[" + ", ".join(fmt(v) for v in value) + "]"
    else:
        text = json.dumps(value, sort_keys=False)
        text = text if len(text) <= 80 else text[:77] + "..."
    return text.replace("|", "\\|").replace("\n", " ")


def flat(record: dict, prefix: str = "") -> dict:
    """A dict's scalar leaves under dotted keys (one row of a table)."""
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and len(value) <= 12:
            out.update(flat(value, name + "."))
        else:
            out[name] = value
    return out


def table(rows: list[dict], first: str | None = None) -> list[str]:
    """A Markdown table of dict rows (the union of their keys as columns)."""
    flats = [flat(r) for r in rows]
    columns = [] if first is None else [first]
    for row in flats:
        columns += [c for c in row if c not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(row.get(c, "")) if row.get(c, "") != "" else ""
                                for c in columns) + " |" for row in flats]
    return lines + [""]


def is_records(value) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(v, dict) for v in value))


def is_keyed_records(value) -> bool:
    return (isinstance(value, dict) and len(value) > 1
            and all(isinstance(v, dict) for v in value.values())
            and all(not any(isinstance(x, (dict, list)) and not _small(x) for x in v.values())
                    for v in value.values()))


def _small(value) -> bool:
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def is_table(value) -> bool:
    return isinstance(value, str) and "|" in value and "\n" in value


def render(value, title: str, depth: int) -> list[str]:
    """Markdown for one part of a result: scalars as a two-column table, lists of
    records and dicts of records as tables, anything else as subsections."""
    heading = "#" * min(depth + 2, 6) + f" {title}" if title else ""
    if is_table(value):
        return [heading, "", value.strip(), ""]  # a table the script wrote itself
    if is_records(value):
        nested = [k for k in dict.fromkeys(k for r in value for k in r)
                  if any(is_records(r.get(k)) for r in value)]
        lines = [heading, ""] + table([{k: v for k, v in r.items() if k not in nested}
                                       for r in value])
        for i, row in enumerate(value):  # a row's own list of records: its own table
            name = next((str(v) for v in row.values() if isinstance(v, str)), str(i))
            for key in nested:
                if is_records(row.get(key)) and depth < MAX_DEPTH:
                    lines += render(row[key], f"{title} / {name} / {key}", depth + 1)
        return lines
    if is_keyed_records(value):
        rows = [{"": key, **v} for key, v in value.items()]
        return [heading, ""] + table(rows, first="")
    if isinstance(value, dict):
        scalars = {k: v for k, v in value.items()
                   if (not isinstance(v, (dict, list)) and not is_table(v)) or _small(v)
                   or (isinstance(v, dict) and all(not isinstance(x, (dict, list)) for x in v.values())
                       and len(v) <= 12)}
        lines = [heading, ""]
        if scalars:
            lines += ["| | |", "|---|---|"]
            lines += [f"| {k} | {fmt(v)} |" for k, v in flat(scalars).items()] + [""]
        for key, sub in value.items():
            if key not in scalars:
                lines += (render(sub, f"{title} / {key}" if title else key, depth + 1)
                          if depth < MAX_DEPTH
                          else [f"{key}: {fmt(sub)}", ""])
        return lines
    return [heading, "", fmt(value), ""]


def provenance(result: dict) -> list[str]:
    """The command, machine and versions a result records."""
    lines = []
    if isinstance(result.get("command"), str):
        lines += ["Command:", "", "```", result["command"], "```", ""]
    machine = {k: result[k] for k in META[1:] if k in result}
    if isinstance(machine.get("machine"), dict):
        machine.update(machine.pop("machine"))
    if machine:
        lines += ["Machine: " + "; ".join(f"{k} {fmt(v)}" for k, v in flat(machine).items()), ""]
    else:
        lines += ["The result records no machine.", ""]
    return lines


def result_section(stem: str, result, figures: list[str]) -> list[str]:
    lines = [f"## {stem}", "", f"`benchmarks/results/{stem}.json`", ""]
    body = result
    if isinstance(result, dict):
        lines += provenance(result)
        body = {k: v for k, v in result.items() if k not in META}
        body = dict(sorted(body.items(), key=lambda kv: not is_table(kv[1])))  # scripts' own first
    for png in figures:
        lines += [f"![{png}](figures/{png})", ""]
    lines += render(body, "", 0)
    return lines


def pages() -> dict[str, str]:
    """Every page's file name and text."""
    names = scripts()
    results = {p.stem: json.loads(p.read_text("utf-8")) for p in sorted(RESULTS.glob("*.json"))}
    studies: dict[str, list[str]] = {}
    for stem, result in results.items():
        studies.setdefault(study_of(stem, result, names), []).append(stem)
    figures: dict[str, list[str]] = {stem: [] for stem in results}
    orphans = []
    for png in sorted(RESULTS.glob("*.png")):
        (figures[png.stem].append(png.name) if png.stem in figures else orphans.append(png))
    for png in orphans:  # a study's extra figure goes with its closest result
        near = max(results, key=lambda s: (len(os.path.commonprefix([s, png.stem])), s))
        figures[near].append(png.name)
    out = {}
    for study, stems in sorted(studies.items()):
        doc = names.get(study, "Results no benchmark script names.")
        lines = [f"# {study}", "", f"Script: `benchmarks/{study}.py`", "", doc, "",
                 "Results on this page: " + ", ".join(f"[{s}](#{s})"
                                                      for s in stems), ""]
        for stem in stems:
            lines += result_section(stem, results[stem], figures[stem])
        out[f"{study}.md"] = "\n".join(lines).rstrip() + "\n"
    out["index.md"] = index(studies, names)
    return out


def index(studies: dict[str, list[str]], names: dict[str, str]) -> str:
    lines = ["# Benchmarks", "",
             "The benchmark suite, by the question each benchmark answers. One page per",
             "script, generated from the JSON (and PNG) files it wrote to",
             "`benchmarks/results/` by `python docs/gen_benchmarks.py`; each result shows",
             "the command and the machine it records. Timings were taken on shared machines",
             "under the load each result records; compare results of one page and one",
             "machine. How to run the benchmarks: `benchmarks/README.md`.", ""]
    listed = {s for group in QUESTIONS.values() for s in group}
    groups = [*QUESTIONS.items(), ("Other benchmarks", sorted(set(studies) - listed))]
    for question, group in groups:
        found = [s for s in group if s in studies]
        if not found:
            continue
        lines += [f"## {question}", "", "| benchmark | what | results |", "|---|---|---|"]
        for study in found:
            what = names.get(study, "").split("\n\n")[0].replace("\n", " ")
            lines.append(f"| [{study}]({study}.md) | {fmt(what)} | {len(studies[study])} |")
        lines.append("")
    missing = sorted(set(names) - set(studies))
    if missing:
        lines += ["Scripts with no results committed: "
                  + ", ".join(f"`{m}.py`" for m in missing) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


def write(out: Path) -> list[Path]:
    """Write every page into ``out`` (and remove stale generated pages)."""
    out.mkdir(parents=True, exist_ok=True)
    text = pages()
    for old in out.glob("*.md"):
        if old.name not in text:
            old.unlink()
    written = []
    for name, body in text.items():
        (out / name).write_text(body, "utf-8")
        written.append(out / name)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    print(f"{len(write(args.out))} pages written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
