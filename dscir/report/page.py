"""The report page: topics, coherence, convergence diagnostics and the pyLDAvis view.

Everything is inline (styles, data, scripts, pyLDAvis's d3 and LDAvis
scripts), so the file opens anywhere with no network. The page works without
scripts (static tables); its script adds a word filter over the topics and
writes what it rendered into ``#dscir-status``; pyLDAvis's script draws its
view into ``#ldavis``.
"""

from __future__ import annotations

import html
import json
from typing import NamedTuple

import numpy as np

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left;
         vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.word small { color: #888; }
.bad { color: #b00; font-weight: bold; }
#dscir-filter { margin: 0.3em 0; padding: 0.2em; }
"""

SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("dscir-data").textContent);
  var rows = document.querySelectorAll("#topics tbody tr");
  var input = document.getElementById("dscir-filter");
  var status = document.getElementById("dscir-status");
  function show() {
    var q = input.value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (row, k) {
      var hit = !q || data.topics[k].some(function (w) { return w.indexOf(q) >= 0; });
      row.style.display = hit ? "" : "none";
      shown += hit ? 1 : 0;
    });
    status.textContent = "showing " + shown + " of " + data.topics.length + " topics";
  }
  input.addEventListener("input", show);
  show();
})();
"""


class LDAvisView(NamedTuple):
    """pyLDAvis's prepared data (its JSON) and the scripts and style that draw it."""

    data_json: str
    d3_js: str
    ldavis_js: str
    css: str


def _script_text(text: str) -> str:
    """Text safe inside a <script> element (no closing tag in it)."""
    return text.replace("</", "<\\/")


def topics_table(topics: list[list[tuple[str, float]]],
                 coherence: dict[str, np.ndarray] | None) -> str:
    measures = list(coherence or {})
    head = "".join(f"<th>{html.escape(m)}</th>" for m in measures)
    body = []
    for k, words in enumerate(topics):
        cells = " ".join(f'<span class="word">{html.escape(w)} <small>{p:.3f}</small></span>'
                         for w, p in words)
        scores = "".join(f'<td class="num">{coherence[m][k]:.3f}</td>' for m in measures)
        body.append(f"<tr><td>{k}</td>{scores}<td>{cells}</td></tr>")
    return (f'<table id="topics"><thead><tr><th>topic</th>{head}<th>top words '
            f'(probability)</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


def diagnosis_table(diagnosis) -> str:
    rows = "".join(
        f'<tr><td>{html.escape(r.quantity)}</td><td class="num{" bad" if r.rhat > 1.1 else ""}'
        f'">{r.rhat:.3f}</td><td class="num">{r.ess:.1f}</td><td>{html.escape(r.note)}</td></tr>'
        for r in diagnosis.rows)
    return (f"<p>{diagnosis.n_chains} chains x {diagnosis.n_draws} kept samples; "
            "rank-normalised split R-hat (1: the chains agree; above 1.1, in red: they do "
            "not) and bulk effective sample size, worst over each row (ArviZ). LDA topics "
            "are matched across chains onto chain 0's first.</p>"
            '<table id="diagnostics"><thead><tr><th>quantity</th><th>R-hat</th><th>ESS</th>'
            f"<th>note</th></tr></thead><tbody>{rows}</tbody></table>")


def render(*, title: str, summary: list[str], topics: list[list[tuple[str, float]]],
           coherence: dict[str, np.ndarray] | None = None, coherence_note: str = "",
           diagnosis=None, diagnosis_note: str = "", ldavis: LDAvisView | None = None,
           ldavis_note: str = "", trace_plots: list[str] = (), stop_note: str = "") -> str:
    """The page as one string. ``topics``: each topic's (word, probability) pairs;
    ``coherence``: per-topic values by measure; ``diagnosis``: a
    ``dscir.api.diagnose.Diagnosis`` (None: a note says why there is none);
    ``trace_plots``: inline SVGs of the held-out score (``dscir.api.convergence``) and
    ``stop_note`` why the run stopped."""
    data = {"topics": [[w.lower() for w, _ in words] for words in topics]}
    parts = [f"<h1>{html.escape(title)}</h1>",
             "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in summary) + "</ul>",
             "<h2>Topics</h2>",
             f"<p>{html.escape(coherence_note)}</p>" if coherence_note else "",
             '<label>filter by word: <input id="dscir-filter" type="search"></label> '
             '<span id="dscir-status">(the page script did not run)</span>',
             topics_table(topics, coherence), "<h2>Convergence</h2>",
             f'<p id="dscir-stop">{html.escape(stop_note)}</p>' if stop_note else "",
             '<div id="trace">' + "".join(trace_plots) + "</div>" if trace_plots else ""]
    parts.append(diagnosis_table(diagnosis) if diagnosis is not None
                 else f"<p>{html.escape(diagnosis_note)}</p>")
    parts.append("<h2>pyLDAvis</h2>")
    if ldavis is None:
        parts.append(f"<p>{html.escape(ldavis_note)}</p>")
    else:
        parts += [f"<style>{ldavis.css}</style>", '<div id="ldavis"></div>',
                  f"<script>{_script_text(ldavis.d3_js)}</script>",
                  f"<script>{_script_text(ldavis.ldavis_js)}</script>",
                  f'<script>new LDAvis("#ldavis", {_script_text(ldavis.data_json)});</script>']
    parts += [f'<script id="dscir-data" type="application/json">'
              f"{_script_text(json.dumps(data))}</script>",
              f"<script>{SCRIPT}</script>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
