"""The driver's heap: large freed buffers go back to the system.

glibc serves an allocation above its mmap threshold (128 KiB at start) with
mmap and unmaps it when freed, but raises the threshold to the size of each
such block freed (up to 32 MiB). After that, blocks that large come from its
arenas (one per thread that allocates: Zarr decodes chunks in a thread pool)
and stay in the process when freed. Reading fitted topics a stored block of
columns at a time frees tens of MB per block, so without a fixed threshold the
driver's resident memory grows by the retained blocks, not by what it holds
(at K = 1000 x W = 10^5, by more than ``top_words`` allocates at its peak).

``release_large_buffers`` fixes the threshold at ``THRESHOLD`` (which also
turns the adjustment off), once per process, unless ``MALLOC_MMAP_THRESHOLD_``
is set in the environment (the user's choice wins); elsewhere than glibc it
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

#: Allocations of at least this many bytes are mapped and unmapped when freed.
THRESHOLD = 1 << 20
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


@functools.cache
def release_large_buffers() -> bool:
    """Fix glibc's mmap threshold at ``THRESHOLD``; whether it was set here."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD))
