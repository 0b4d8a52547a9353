"""The SCIR paper's sparse/dense Dirichlet study at the paper's settings.

d = 10, N = 1000, alpha = 0.1; 1000 burn-in + 1000 kept steps; minibatch
fractions 0.001 ... 0.5; five seeds; per seed the best step size of each
method's grid. Writes benchmarks/results/dirichlet_study.json,
dirichlet_boxplots.png and dirichlet_ks.png (the same code as
`dscir experiment dirichlet`).

    python benchmarks/dirichlet_study.py
"""

from pathlib import Path

from dscir.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["experiment", "dirichlet", "--no-progress",
                           "--out", str(Path(__file__).resolve().parent / "results")]))
