"""What the benchmark scripts share: where the shared corpora are, and the machine's CPU."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """``../shared/data`` from the project root (or from any parent folder, e.g. a
    worktree); ``DSCIR_SHARED_DATA`` overrides it."""
    if os.environ.get("DSCIR_SHARED_DATA"):
        return Path(os.environ["DSCIR_SHARED_DATA"])
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return ROOT.parent / "shared" / "data"


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()
