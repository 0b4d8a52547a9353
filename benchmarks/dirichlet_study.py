"""The SCIR paper's sparse/dense Dirichlet study at the paper's settings.

d = 10, N = 1000, alpha = 0.1; 1000 burn-in + 1000 kept steps; minibatch
fractions 0.001 ... 0.5; five seeds; per seed the best step size of each
method's grid; the KS distance and the KSD with the exact score. Writes
benchmarks/results/dirichlet_study.json, dirichlet_boxplots.png,
dirichlet_ks.png and dirichlet_ksd.png (the same code as `dscir experiment
dirichlet`), and adds the load averages before and after to the JSON.

    python benchmarks/dirichlet_study.py
"""

import argparse
import json
import os

from _common import RESULTS
from dscir.cli import main

if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    out = RESULTS
    before = os.getloadavg()
    status = main(["experiment", "dirichlet", "--no-progress", "--out", str(out)])
    if status == 0:
        path = out / "dirichlet_study.json"
        data = json.loads(path.read_text())
        data["loadavg"] = {"before": before, "after": os.getloadavg()}
        path.write_text(json.dumps(data, indent=1))
    raise SystemExit(status)
