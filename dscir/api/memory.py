"""Memory: what is available now, and the checks before a fit.

A fit whose K x W arrays would not fit where its placement puts them (the
driver's memory, or the workers' memory limits plus the disk they spill to) is
refused before any cluster starts, with one error naming the size, the largest
K that fits and the remedies, rather than dying later in an allocation (or
under the kernel's OOM killer). A K above the vocabulary or the documents is
allowed with a warning.
"""

from __future__ import annotations

import os
import shutil
import warnings

from dscir.errors import DscirError, spell

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


def _skipped() -> bool:
    return os.environ.get(MEMORY_CHECK_ENV, "1").strip().lower() in ("0", "off", "no", "false")


def _refuse(rows: int, n_words: int, arrays: list[str], where: str, have: int,
            fits: str) -> None:
    """The one error of a check: the size, what holds it, what would fit."""
    need = 8 * len(arrays) * int(rows) * int(n_words)
    if need <= have:
        return
    raise DscirError(
        f"{rows:,} x {n_words:,} parameters need about {_gb(need)} of {where} "
        f"({len(arrays)} float64 {rows:,} x {n_words:,} arrays: {', '.join(arrays)}), "
        f"more than the {fits}; at most {have // (8 * len(arrays) * int(n_words)):,} "
        f"topics/clusters fit: use fewer, or a smaller vocabulary, or set "
        f"{MEMORY_CHECK_ENV}=0 to skip this check")


def check_driver_memory(rows: int | None, n_words: int, arrays: list[str]) -> None:
    """Refuse ``len(arrays)`` float64 ``rows`` x ``n_words`` driver arrays that would
    not fit in the memory available now (``rows`` None or 0: nothing to check)."""
    if not rows or _skipped():
        return
    have = available_memory()
    if have is not None:
        _refuse(rows, n_words, arrays, "driver memory", have, f"{_gb(have)} available")


def _spill_room(dask_worker=None) -> tuple[str, int]:
    """(host, free bytes of the disk a Dask worker spills to): run on each worker,
    or here for the embedded cluster not yet started (its workers' default
    directory); 0 when spilling to disk is off."""
    import socket
    import tempfile

    import dask

    if dask.config.get("distributed.worker.memory.spill", 0.7) is False:
        return socket.gethostname(), 0
    path = (dask_worker.local_directory if dask_worker is not None else
            dask.config.get("temporary-directory", None) or tempfile.gettempdir())
    try:
        return socket.gethostname(), shutil.disk_usage(path).free
    except OSError:
        return socket.gethostname(), 0


def worker_capacity(cluster: dict | None) -> tuple[int, int, str] | None:
    """(memory, spill disk, what) of the workers a fit with the ``fit`` keywords
    ``cluster`` (``client``, ``address``, ``scheduler_file``) runs on: a client's
    workers' memory limits and their hosts' free disk; without client or address
    (and no client running) the embedded cluster, not started yet, on this
    machine's available memory and disk. None when unknown: a scheduler not yet
    connected to, or workers without a memory limit."""
    import dask

    from dscir.engine.cluster import current_client

    cluster = cluster or {}
    client = cluster.get("client")
    if client is None:
        if cluster.get("address") or cluster.get("scheduler_file") or \
                dask.config.get("scheduler-address", None):
            return None
        client = current_client()
    if client is None:
        have = available_memory()
        return None if have is None else (have, _spill_room()[1], "this machine's memory")
    workers = client.scheduler_info(n_workers=-1)["workers"]
    limits = [int(w.get("memory_limit") or 0) for w in workers.values()]
    if not limits or min(limits) <= 0:
        return None
    disks = dict(client.run(_spill_room).values())  # one disk per host
    return sum(limits), sum(disks.values()), f"the memory limits of {len(limits)} workers"


def check_worker_memory(rows: int, n_words: int, arrays: list[str],
                        cluster: dict | None = None) -> None:
    """Refuse ``len(arrays)`` float64 ``rows`` x ``n_words`` arrays held by the
    workers that their memory and the disk they spill to cannot hold
    (``worker_capacity``; unknown: no check)."""
    if not rows or _skipped():
        return
    capacity = worker_capacity(cluster)
    if capacity is not None:
        memory, spill, what = capacity
        _refuse(rows, n_words, arrays, "worker memory", memory + spill,
                f"{_gb(memory + spill)} the workers can hold ({_gb(memory)}: {what}, and "
                f"{_gb(spill)} of disk to spill to)")


def warn_rows(rows: int | None, n_words: int, n_docs: int, name: str) -> None:
    """A warning for more topics/clusters (``name``: n_topics, n_clusters) than
    words or training documents: the extra ones can only repeat or stay empty."""
    if not rows:
        return
    plural = name.split("_")[-1]
    for size, what in ((n_words, "words in the vocabulary"), (n_docs, "training documents")):
        if rows > size:
            warnings.warn(f"{spell(f'{name}={rows}', f'--{plural} {rows}')} is more than "
                          f"the {size:,} {what}: the extra {plural} can only repeat others "
                          f"or stay empty; choose fewer", UserWarning, stacklevel=2)
            return
