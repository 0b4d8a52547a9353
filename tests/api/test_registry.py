"""Run readers ask the run's estimator class what it supports (``dscir.api.registry``),
not the model's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dscir
from dscir.api.registry import ESTIMATORS, estimator_class
from dscir.errors import DscirError

ROOT = Path(dscir.__file__).parent


def test_every_estimator_is_registered_by_its_run_model():
    assert ESTIMATORS == {"lda": dscir.LDA, "dpmm": dscir.DPMixture, "mixture": dscir.Mixture}


@pytest.mark.parametrize("model, needs, what, message", [
    ("mixture", "_diagnosable", "diagnose", "diagnose is for DPMixture and LDA runs, not mixture"),
    ("mixture", "_ksd_count", "the KSD", "the KSD is for DPMixture and LDA runs, not mixture"),
    ("dpmm", "_reportable", "a report", "a report is for LDA runs, not dpmm"),
])
def test_an_unsupported_run_is_one_clear_error(model, needs, what, message):
    with pytest.raises(DscirError, match=message):
        estimator_class(model, needs, what)
    with pytest.raises(DscirError, match="no estimator fits hmm runs"):
        estimator_class("hmm")


def test_the_run_readers_compare_no_model_names():
    """Guards against behaviour chosen by a model-name string creeping back."""
    for path in ("api/diagnose.py", "api/stein.py", "report/build.py"):
        text = (ROOT / path).read_text()
        assert not re.search(r"""(model|_model_name)\s*[!=]=\s*["']|in \(["']lda""", text), path
