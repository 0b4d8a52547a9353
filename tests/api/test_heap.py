"""The driver's heap (``dscir.api.heap``): reading stored topics fixes glibc's
mmap threshold, so large freed buffers leave the process.

Guards against: the threshold left to glibc's adjustment when fitted topics are
read (mutant ``heap-threshold-not-fixed``), which kept the freed column blocks
of ``top_words``/``transform`` resident after each call. Each case runs in a
new process, whose threshold has not been touched yet.
"""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys

import numpy as np
import pytest
import zarr

RETAINED = """
import sys
import numpy as np
from dscir.api import fitted

def rss():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS")) * 1024

if sys.argv[2] == "read":
    fitted.read_topics(sys.argv[1])
a = np.ones(20 << 17)  # 20 MB: mapped; freeing it raises glibc's threshold to 20 MB
del a
before = rss()
b = np.ones(16 << 17)  # 16 MB: from the heap unless the threshold is fixed
del b
print(rss() - before)
"""


def retained(path, mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", RETAINED, str(path), mode], env=env,
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
                    reason="glibc's mallopt and /proc/self/status")
def test_reading_stored_topics_returns_freed_blocks_to_the_system(tmp_path):
    path = tmp_path / "phi_mean"
    zarr.create_array(str(path), shape=(2, 3), dtype="float64")[...] = np.full((2, 3), 1 / 3)
    assert retained(path, "none") > 8 << 20  # glibc's adjustment keeps the 16 MB block
    assert retained(path, "read") < 2 << 20
