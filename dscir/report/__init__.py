"""A fitted LDA run as one self-contained HTML page (``dscir report``).

``page`` renders the page from plain values (no Dask, no files); ``build``
computes those values for a run and a store on the cluster and writes the page.
"""

from dscir.report.build import write_report
from dscir.report.page import render

__all__ = ["render", "write_report"]
