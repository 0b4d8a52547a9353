"""The held-out score of a fit against passes and seconds, as inline SVG (no
plotting library, no network), with where burn-in ended and where the run
stopped marked: the report page's convergence plot (``dscir report``) and the
fitted estimator's in a notebook."""

from __future__ import annotations

import html
from collections.abc import Sequence

W, H, LEFT, RIGHT, TOP, BOTTOM = 460, 260, 62, 16, 24, 40


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    import math

    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def trace_svg(x: Sequence[float], y: Sequence[float], *, xlabel: str, ylabel: str,
              marks: Sequence[tuple[float, str]] = (), title: str = "") -> str:
    """An SVG line plot of ``y`` against ``x`` with vertical ``marks`` (position, label)."""
    if not len(x):
        return ""
    x0, x1 = 0.0, max(max(x), *(m for m, _ in marks), 1e-12)
    y0, y1 = min(y), max(y)
    pad = (y1 - y0) * 0.05 or abs(y1) * 0.05 or 1.0
    y0, y1 = y0 - pad, y1 + pad
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(v):
        return LEFT + (v - x0) / (x1 - x0) * pw

    def py(v):
        return TOP + (y1 - v) / (y1 - y0) * ph

    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<title>{e(title or ylabel)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for t in _ticks(x0, x1):
        out.append(f'<text x="{px(t):.1f}" y="{TOP + ph + 14}" text-anchor="middle">{t:g}</text>')
    for t in _ticks(y0, y1, 4):
        out.append(f'<text x="{LEFT - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{t:.4g}</text>')
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" '
                   'stroke="#eee"/>')
    points = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in zip(x, y))
    out.append(f'<polyline class="trace" points="{points}" fill="none" stroke="#1f77b4" '
               'stroke-width="1.5"/>')
    for i, (m, label) in enumerate(marks):
        colour = "#d62728" if i == len(marks) - 1 else "#888"
        out.append(f'<line class="mark" x1="{px(m):.1f}" x2="{px(m):.1f}" y1="{TOP}" '
                   f'y2="{TOP + ph}" stroke="{colour}" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{px(m) - 3:.1f}" y="{TOP + 12 + 12 * i}" text-anchor="end" '
                   f'fill="{colour}">{e(label)}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 6}" text-anchor="middle">{e(xlabel)}</text>')
    out.append(f'<text x="12" y="{TOP + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 12 {TOP + ph / 2})">{e(ylabel)}</text>')
    out.append(f'<text x="{LEFT}" y="14">{e(title)}</text>' if title else "")
    out.append("</svg>")
    return "".join(out)


def convergence_svgs(model, n_train: int) -> tuple[list[str], str]:
    """The fitted ``model``'s held-out score against passes over its ``n_train``
    training documents and against seconds, the stop marked; and a sentence saying
    why the run stopped (no plots, and a sentence why, without held-out scores)."""
    import numpy as np

    ev = list(getattr(model, "evaluations_", []))
    reason = getattr(model, "stop_reason_", "n_iter")
    stopping = getattr(model, "stopping_", None)
    why = {"plateau": "its held-out score reached the plateau of the n_iter='auto' rule",
           "max_passes": "it reached the n_iter='auto' rule's max_passes",
           "n_iter": "it ran the n_iter iterations asked for"}.get(reason, reason)
    sentence = f"The run stopped at iteration {model.n_iter_}: {why}."
    if stopping is not None:
        read = ("the current state's score read (the fit is that state)"
                if stopping.get("reads") == "state" else
                f"burn-in ended at iteration {stopping['burn_end']}")
        sentence += (f" Rule: held-out change below {stopping['tolerance']:.2%} a pass over "
                     f"{stopping['window']:g} passes, from {stopping['min_passes']:g} to "
                     f"{stopping['max_passes']:g} passes; {read}.")
    if not ev:
        return [], sentence + " The run has no held-out scores to plot."
    its = np.array([e[0] for e in ev], dtype=float)
    scores = [float(e[1]) for e in ev]
    per_pass = (stopping or {}).get("iters_per_pass") or \
        n_train / max(int(getattr(model.config_, "batch_size", n_train) or n_train), 1)
    metric = ev[0]._fields[1].replace("_", " ")
    marks = []
    if stopping is not None and stopping.get("burn_end") is not None:
        marks.append((stopping["burn_end"], "burn-in end"))
    marks.append((model.n_iter_, f"stop ({reason})"))
    svgs = [trace_svg(its / per_pass, scores, xlabel="passes over the training documents",
                      ylabel=f"held-out {metric}", title=f"held-out {metric} by pass",
                      marks=[(m / per_pass, label) for m, label in marks])]
    walls = np.asarray(getattr(model, "history_", {}).get("wall", []), dtype=float)
    if walls.size >= model.n_iter_ > 0 and walls.size:
        clock = np.concatenate([[0.0], np.cumsum(walls)])
        at = lambda m: float(clock[min(int(m), walls.size)])
        svgs.append(trace_svg([at(m) for m in its], scores,
                              xlabel="seconds of iterations (scoring not counted)",
                              ylabel=f"held-out {metric}", title=f"held-out {metric} by time",
                              marks=[(at(m), label) for m, label in marks]))
    return svgs, sentence
