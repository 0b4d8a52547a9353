"""The driver's memory: what is available now, and the check before a fit.

A fit whose K x W driver arrays would not fit is refused before any cluster
starts, with one error naming the arrays and the remedies, rather than dying
later in an allocation (or under the kernel's OOM killer).
"""

from __future__ import annotations

import os

from dscir.errors import DscirError

#: Set to 0 (off, no, false) to skip ``check_driver_memory``.
MEMORY_CHECK_ENV = "DSCIR_MEMORY_CHECK"


def _meminfo_available() -> int | None:
    """/proc/meminfo's MemAvailable, else free pages from sysconf (bytes)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_available() -> int | None:
    """What a cgroup v2 memory limit leaves (page cache counted as free); None
    without a limit."""
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        with open("/sys/fs/cgroup/memory.stat") as f:
            stat = dict(line.split()[:2] for line in f if line.strip())
        return int(limit) - used + int(stat.get("file", 0))
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """Bytes of memory available to this process now: /proc/meminfo's MemAvailable
    (else free pages from sysconf), capped by a cgroup v2 memory limit; None if unknown."""
    have = _meminfo_available()
    if have is None:
        return None
    cgroup = _cgroup_available()
    return max(have if cgroup is None else min(have, cgroup), 0)


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def check_driver_memory(rows: int | None, n_words: int, arrays: list[str]) -> None:
    """Refuse ``len(arrays)`` float64 ``rows`` x ``n_words`` driver arrays that would
    not fit in the memory available now (``rows`` None or 0: nothing to check)."""
    if not rows or os.environ.get(MEMORY_CHECK_ENV, "1").strip().lower() in (
            "0", "off", "no", "false"):
        return
    need = 8 * len(arrays) * int(rows) * int(n_words)
    have = available_memory()
    if have is not None and need > have:
        raise DscirError(
            f"{rows:,} x {n_words:,} parameters need about {_gb(need)} of driver memory "
            f"({len(arrays)} float64 {rows:,} x {n_words:,} arrays: {', '.join(arrays)}), "
            f"more than the "
            f"{_gb(have)} "
            f"available; use fewer topics/clusters or a smaller vocabulary, or set "
            f"{MEMORY_CHECK_ENV}=0 to skip this check")
