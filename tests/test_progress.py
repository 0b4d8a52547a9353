"""Progress bars in a notebook without ipywidgets: the text bar, no TqdmWarning."""

from __future__ import annotations

import importlib.machinery
import sys
import types
import warnings

import tqdm.auto
import tqdm.std

from dscir import progress


def test_without_ipywidgets_the_text_bar_and_no_warning(monkeypatch):
    """tqdm.auto's class would warn in Jupyter (no widget): the plain one is used."""
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets fails
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = progress.tqdm(total=3, disable=True)
    assert type(bar) is tqdm.std.tqdm


def test_with_ipywidgets_tqdm_auto_chooses(monkeypatch):
    widgets = types.ModuleType("ipywidgets")
    widgets.__spec__ = importlib.machinery.ModuleSpec("ipywidgets", None)
    monkeypatch.setitem(sys.modules, "ipywidgets", widgets)
    assert type(progress.tqdm(total=3, disable=True)) is tqdm.auto.tqdm
