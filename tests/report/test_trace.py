"""The report's convergence plot (dscir.api.convergence): the held-out score against
passes and seconds, burn-in's end and the stop marked, and why the run stopped."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np

from dscir.api.convergence import convergence_svgs
from dscir.models.lda import LDAModel
from dscir.report.page import render


def auto_model():
    ev = [LDAModel.Evaluation(m, 1000.0 - m) for m in range(10, 130, 10)]
    stopping = {"tolerance": 0.001, "window": 5.0, "min_passes": 10.0, "max_passes": 100.0,
                "iters_per_pass": 10.0, "burn_end": 60, "stopped": 120, "reason": "plateau"}
    return SimpleNamespace(evaluations_=ev, n_iter_=120, stop_reason_="plateau",
                           stopping_=stopping, config_=SimpleNamespace(batch_size=50),
                           history_={"wall": np.full(120, 0.5)})


def test_an_auto_run_is_plotted_by_pass_and_by_second_with_its_stop_marked():
    """Guards against a plot whose x axis is iterations where it says passes, or whose
    stop mark is not where the run stopped."""
    svgs, note = convergence_svgs(auto_model(), n_train=500)
    assert len(svgs) == 2
    by_pass, by_time = svgs
    xs = [float(v) for v in re.findall(r'class="mark" x1="([\d.]+)"', by_pass)]
    first_point = re.search(r'points="([\d.]+),', by_pass).group(1)
    # burn-in end at pass 6 and the stop at pass 12 of an x axis from 0 to 12
    left, width = 62, 460 - 62 - 16
    assert xs == [round(left + 6 / 12 * width, 1), round(left + width, 1)]
    assert float(first_point) == round(left + 1 / 12 * width, 1)
    assert "stop (plateau)" in by_pass and "seconds" in by_time
    assert "reached the plateau" in note and "0.10% a pass" in note
    page = render(title="t", summary=[], topics=[], trace_plots=svgs, stop_note=note)
    assert page.count("<svg") == 2 and 'id="dscir-stop"' in page


def test_a_fixed_run_says_it_ran_what_was_asked_and_plots_its_scores():
    model = auto_model()
    model.stop_reason_, model.stopping_ = "n_iter", None
    svgs, note = convergence_svgs(model, n_train=500)  # 500 / 50: 10 iterations a pass
    assert "ran the n_iter iterations asked for" in note and len(svgs) == 2
    model.evaluations_ = []
    assert convergence_svgs(model, 500) == ([], note + " The run has no held-out scores "
                                                       "to plot.")
