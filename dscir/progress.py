"""Progress bars: tqdm's notebook widget where it can be drawn, else the text bar.

``tqdm.auto`` picks the widget in Jupyter, and without ipywidgets it falls back
to the text bar with a ``TqdmWarning`` on every bar; so the widget is asked for
only when ipywidgets is importable.
"""

from __future__ import annotations

import importlib.util


def _has_widgets() -> bool:
    try:
        return importlib.util.find_spec("ipywidgets") is not None
    except (ImportError, ValueError):  # a module set to None, or without a spec
        return False


def tqdm(*args, **kwargs):
    """A ``tqdm`` bar: ``tqdm.auto``'s (a widget in Jupyter) when ipywidgets is
    importable, else the text bar."""
    if _has_widgets():
        from tqdm.auto import tqdm as bar
    else:
        from tqdm import tqdm as bar
    return bar(*args, **kwargs)
