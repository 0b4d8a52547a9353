"""Where the shared real corpora are."""

from __future__ import annotations

import os
from pathlib import Path


def _shared_data() -> Path:
    if os.environ.get("DSCIR_SHARED_DATA"):
        return Path(os.environ["DSCIR_SHARED_DATA"])
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return Path("/work/shared/data")  # this workplace's machines, for clones made elsewhere


DATA = _shared_data()
