"""The LDA iteration model (benchmarks/_iteration_model.py): its terms add up, grow
with the work they stand for, and its fit recovers constants it was given."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _iteration_model as im  # noqa: E402

TRUE = im.Constants(g0=2e-8, g1=3e-9, c0=1e-3, u_kw=4e-9, u_col=2e-9, u0=5e-3, o0=0.02,
                    o_task=4e-3, o_hosts=0.01, trips=6.0, bandwidth=5e8)
BASE = im.Config(K=50, W=5000, batch=500, doc_length=100.0, workers=2, delay_ms=5,
                 hosts=True)


def test_terms_add_up_to_the_total():
    p = im.predict(BASE, TRUE)
    assert set(p) == {*im.TERMS, "total"}
    assert p["total"] == pytest.approx(sum(p[t] for t in im.TERMS), rel=1e-12)
    assert all(p[t] > 0 for t in im.TERMS)


def test_each_term_is_its_constants_times_the_counts():
    """Hand-computed terms of one configuration: the dense kernel is O(K) per token,
    the update reads all of K x W, latency is trips one-way delays."""
    c = im.Config(K=10, W=100, batch=4, doc_length=50.0, workers=2, sweeps=3, delay_ms=2)
    per_part = 4 * 50.0 / 2
    distinct = 100 * (1 - math.exp(-per_part / 100))
    p = im.predict(c, TRUE)
    assert p["compute"] == pytest.approx(per_part * 3 * (2e-8 + 10 * 3e-9) + 1e-3)
    assert p["update"] == pytest.approx(4e-9 * 1000 + 2e-9 * 2 * 10 * distinct + 5e-3)
    assert p["latency"] == pytest.approx(6.0 * 0.002)
    assert p["overhead"] == pytest.approx(0.02 + 2 * 4e-3)
    nonzero = 2 * min(10 * distinct, per_part)
    assert p["bytes"] == pytest.approx((2 * 10 * distinct * 4 + nonzero * 12) / 5e8)


@pytest.mark.parametrize("field, larger", [("K", 200), ("W", 20000), ("batch", 2000),
                                           ("sweeps", 20), ("delay_ms", 20)])
def test_seconds_grow_with_topics_words_minibatch_sweeps_and_delay(field, larger):
    assert (im.predict(replace(BASE, **{field: larger}), TRUE)["total"]
            > im.predict(BASE, TRUE)["total"])


@pytest.mark.parametrize("parallel, ratio", [(math.inf, 0.5), (2.0, 0.5), (1.0, 1.0)])
def test_a_second_worker_halves_the_compute_only_with_a_core_of_its_own(parallel, ratio):
    k = replace(TRUE, parallel=parallel)
    one = im.predict(replace(BASE, workers=1), k)["compute"] - TRUE.c0
    two = im.predict(BASE, k)["compute"] - TRUE.c0
    assert two == pytest.approx(one * ratio)


def test_distinct_words_saturate_at_the_vocabulary():
    assert im.distinct_words(10, 10**6) == pytest.approx(10, rel=1e-4)
    assert im.distinct_words(10**7, 1000) == pytest.approx(1000)


def test_fit_recovers_the_constants_of_noiseless_measurements():
    grid = [im.Config(K=k, W=w, batch=b, doc_length=100.0, workers=n, hosts=h, delay_ms=d)
            for k, w, b, n in [(20, 2000, 200, 1), (100, 10000, 1000, 2), (50, 2000, 2000, 2),
                               (200, 10000, 100, 1), (30, 5000, 300, 1)]
            for h, d in [(False, 0.0), (True, 0.0), (True, 10.0)]]
    rows = []
    for c in grid:
        p = im.predict(c, TRUE)
        rows.append((c, {"compute": p["compute"], "update": p["update"], "wall": p["total"]}))
    fitted = im.fit(rows)
    for name in ("g0", "g1", "c0", "u_kw", "u_col", "u0", "o0", "o_task", "o_hosts", "trips",
                 "bandwidth"):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUE, name), rel=1e-6), name
    assert all(np.isclose(im.predict(c, fitted)["total"], m["wall"]) for c, m in rows)


def test_constants_survive_their_json_form_with_an_infinite_bandwidth():
    k = replace(TRUE, bandwidth=math.inf)
    assert im.as_dict(k)["bandwidth"] is None
    assert im.from_dict(im.as_dict(k)) == k


@pytest.mark.parametrize("field, value", [("K", 0), ("workers", 0), ("doc_length", 0.0),
                                          ("delay_ms", -1.0)])
def test_a_bad_configuration_is_one_error_naming_it(field, value):
    with pytest.raises(ValueError, match=field):
        replace(BASE, **{field: value})


def test_fit_finds_the_cores_the_parts_really_ran_on():
    """Two parts on one core take as long as one part of twice the tokens: the fit
    must say one core, not charge the second worker to a larger cost per token."""
    shared = replace(TRUE, parallel=1.0)
    rows = []
    for k, b, n in [(20, 200, 1), (20, 200, 2), (100, 1000, 1), (100, 1000, 2), (50, 400, 2)]:
        c = im.Config(K=k, W=2000, batch=b, doc_length=100.0, workers=n)
        p = im.predict(c, shared)
        rows.append((c, {"compute": p["compute"], "update": p["update"], "wall": p["total"]}))
    fitted = im.fit(rows, bandwidth=TRUE.bandwidth)
    assert fitted.parallel == pytest.approx(1.0)
    assert (fitted.g0, fitted.g1) == pytest.approx((TRUE.g0, TRUE.g1), rel=1e-6)
