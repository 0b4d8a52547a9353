"""Mutation check: every plausible bug below must make its guarding tests fail.

    PYTHONPATH=. python tests/mutants.py            # all mutants
    PYTHONPATH=. python tests/mutants.py lda-scale-dropped dp-scale-dropped   # some
    PYTHONPATH=. python tests/mutants.py --no-baseline  # after the tests passed (CI)

For each mutant the package, the tests and pyproject.toml are copied to a
temporary directory, the mutant's exact original text is replaced (it must
occur exactly once, or the script stops: the table has gone stale), and the
guarding tests run there (cwd and PYTHONPATH at the copy, so the mutated
package is the one imported, also by Dask workers). A mutant is killed when
the tests fail. First the guarding tests run on an unmutated copy and must
pass (otherwise a failing test would "kill" everything). Exit status 0 only
if the baseline passes and every mutant is killed.

numba's cache files are copied with the package: unmutated modules load their
compiled kernels, a mutated module (new source stamp) is compiled again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Mutant(NamedTuple):
    name: str
    path: str  # relative to the repository root
    original: str  # exact text; must occur exactly once
    replacement: str
    tests: tuple[str, ...]  # pytest node ids that must fail


LAWS = "tests/test_sampler_laws.py"
GAMMA = LAWS + "::test_stationary_law_on_a_gamma_target"
DIRICHLET = LAWS + "::test_stationary_law_on_a_dirichlet_posterior"
SCALE = "tests/test_minibatch_scale.py"
STUDY = "tests/test_dirichlet_study.py::test_scir_beats_sgrld_on_the_sparse_posterior"
GSGRHMC = "tests/test_gsgrhmc.py"
GSGRHMC_DRIFT = GSGRHMC + "::test_drift_is_the_recipe_drift_with_the_finite_difference_gradient"
GSGRHMC_NOISE = GSGRHMC + "::test_noise_is_normal_with_variance_2_eps_theta"
GSGRHMC_JOINT = GSGRHMC + "::test_joint_stationary_law_gamma_position_and_normal_momentum"
GSGRHMC_POSITION = GSGRHMC + "::test_position_moves_with_the_new_momentum_scaled_by_sqrt_theta"
GSGRHMC_REFLECTION = GSGRHMC + "::test_reflection_at_zero_flips_position_and_momentum"
KSD_BRUTE = "tests/test_ksd.py::test_matches_a_brute_force_double_loop"
KSD_NORMAL = "tests/test_ksd.py::test_standard_normal_target"

MUTANTS = [
    # -- the review's table (issue 15) --
    Mutant("gsgrhmc-naive", "dscir/samplers/sgrhmc.py",
           "drift = (a - 0.5) / st", "drift = (a - 1.0) / st",
           (GAMMA + "[gsgrhmc-1.0-0.05-2000-0.05]",
            DIRICHLET + "[gsgrhmc-0.05-2000-1000-0.08]")),
    Mutant("lda-scale-off-by-one", "dscir/models/lda/model.py",
           "scale = self.data.train.size / parts.docs.size / results[0].n_kept",
           "scale = self.data.train.size / (parts.docs.size + 1) / results[0].n_kept",
           (SCALE + "::test_lda_counts_are_scaled_by_d_over_minibatch_over_kept_sweeps",)),
    Mutant("lda-scale-dropped", "dscir/models/lda/model.py",
           "scale = self.data.train.size / parts.docs.size / results[0].n_kept",
           "scale = 1 / results[0].n_kept",
           (SCALE + "::test_lda_counts_are_scaled_by_d_over_minibatch_over_kept_sweeps",)),
    Mutant("dp-scale-dropped", "dscir/models/dpmm/model.py",
           "scale = self.data.train.size / users.size", "scale = 1.0",
           (SCALE + "::test_dp_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("dp-alpha-from-prior", "dscir/models/dpmm/sticks.py",
           "log_g = sample_stationary(np.array([shape + n_sticks]), key)[0]\n"
           "    return float(np.exp(log_g) / (rate - log_rest))",
           "log_g = sample_stationary(np.array([shape]), key)[0]\n"
           "    return float(np.exp(log_g) / rate)",
           ("tests/test_dp_alpha.py",)),
    Mutant("study-scir-grid-too-small", "dscir/experiments/dirichlet.py",
           '"scir": [1, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001]',
           '"scir": [1e-3, 5e-4, 1e-4, 5e-5, 1e-5, 5e-6, 1e-6]',
           (STUDY,)),
    # -- more --
    Mutant("mixture-scale-dropped", "dscir/models/mixture/model.py",
           "scale = self.data.train.size / docs.size", "scale = 1.0",
           (SCALE + "::test_mixture_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("scir-poisson-mean-without-1/(1-e^-h)", "dscir/samplers/cir.py",
           "log_ratio = -h - log_scale", "log_ratio = -h",
           ("tests/test_cir.py::test_one_step_is_the_noncentral_chi_square",)),
    Mutant("scir-without-(1-e^-h)-scale", "dscir/samplers/cir.py",
           "out[j] = log_scale + _log_poisson_gamma(", "out[j] = _log_poisson_gamma(",
           ("tests/test_cir.py::test_one_step_is_the_noncentral_chi_square",)),
    Mutant("sgrld-drift-without-total-term", "dscir/samplers/sgrld.py",
           "drift = prior[r, w] + counts[r, w] - t - total_c * t / total_t",
           "drift = prior[r, w] + counts[r, w] - t",
           (DIRICHLET + "[sgrld-0.01-3000-1500-0.07]",)),
    Mutant("sgrld-noise-halved", "dscir/samplers/sgrld.py",
           "np.sqrt(2.0 * eps * t)", "np.sqrt(eps * t)",
           (GAMMA + "[sgrld-1.0-0.01-3000-0.05]",)),
    Mutant("sgld-noise-halved", "dscir/samplers/sgld.py",
           "noise = np.sqrt(2.0 * eps)", "noise = np.sqrt(eps)",
           (GAMMA + "[sgld-5.0-0.01-3000-0.055]",)),
    Mutant("sghmc-without-friction", "dscir/samplers/sghmc.py",
           "- eps * friction * r[i, w]", "- 0.0 * r[i, w]",
           (GAMMA + "[sghmc-5.0-0.05-1500-0.05]",)),
    # -- gSGRHMC piece by piece (issue 20) --
    Mutant("gsgrhmc-naive-drift", "dscir/samplers/sgrhmc.py",
           "drift = (a - 0.5) / st", "drift = (a - 1.0) / st", (GSGRHMC_DRIFT,)),
    Mutant("gsgrhmc-gradient-without-total-term", "dscir/samplers/sgrhmc.py",
           "st * (1.0 + ratio)", "st", (GSGRHMC_DRIFT,)),
    Mutant("gsgrhmc-identity-friction", "dscir/samplers/sgrhmc.py",
           "- t * r[i, w]", "- r[i, w]", (GSGRHMC_DRIFT, GSGRHMC_JOINT)),
    Mutant("gsgrhmc-noise-halved", "dscir/samplers/sgrhmc.py",
           "np.sqrt(2.0 * eps * t)", "np.sqrt(eps * t)", (GSGRHMC_NOISE, GSGRHMC_JOINT)),
    Mutant("gsgrhmc-position-old-momentum", "dscir/samplers/sgrhmc.py",
           "v = t + eps * st * m", "v = t + eps * st * r[i, w]", (GSGRHMC_POSITION,)),
    Mutant("gsgrhmc-reflection-keeps-momentum", "dscir/samplers/sgrhmc.py",
           "v, m = -v, -m", "v = -v",
           (GSGRHMC_REFLECTION,)),
    # -- kernel Stein discrepancy (issue 17, part 3) --
    Mutant("ksd-cross-term-dropped", "dscir/diagnostics/ksd.py",
           "term -= (2.0 * b) * delta * (sx - sy) * ub1\n", "\n",
           (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxk-sign", "dscir/diagnostics/ksd.py",
           "(sx - sy) * ub1", "(sx + sy) * ub1", (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxdyk-sign", "dscir/diagnostics/ksd.py",
           "term -= (4.0 * b * (b - 1.0))", "term += (4.0 * b * (b - 1.0))",
           (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxdyk-constant-dropped", "dscir/diagnostics/ksd.py",
           "totals[j] += term.sum() + const", "totals[j] += term.sum()",
           (KSD_BRUTE, KSD_NORMAL)),
]


def copy_tree(dest: Path) -> None:
    shutil.copytree(ROOT / "dscir", dest / "dscir")
    shutil.copytree(ROOT / "tests", dest / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def apply(dest: Path, m: Mutant) -> None:
    path = dest / m.path
    text = path.read_text()
    n = text.count(m.original)
    if n != 1:
        raise SystemExit(f"mutant {m.name}: the original text occurs {n} times in {m.path} "
                         f"(expected once); update tests/mutants.py:\n{m.original}")
    path.write_text(text.replace(m.original, m.replacement))


def run_tests(dest: Path, tests: tuple[str, ...], log: Path) -> tuple[int, str]:
    """pytest's exit status on ``tests`` in the copy at ``dest``, and its last line."""
    env = {**os.environ, "PYTHONPATH": str(dest)}
    with open(log, "w") as out:
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             *tests], cwd=dest, env=env, stdout=out, stderr=subprocess.STDOUT
                            ).returncode
    lines = [x for x in log.read_text().splitlines() if x.strip()]
    return rc, (lines[-1].strip("= ") if lines else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the guarding tests on the unmutated code")
    parser.add_argument("--keep", action="store_true", help="keep the copies and logs")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    mutants = [m for m in MUTANTS if not args.names or m.name in args.names]
    work = Path(tempfile.mkdtemp(prefix="dscir-mutants-"))
    failed = False
    start = time.perf_counter()
    try:
        # every mutant's original text first: a stale table fails before any test runs
        for i, m in enumerate(mutants):
            probe = work / f"probe{i}"
            (probe / Path(m.path).parent).mkdir(parents=True)
            shutil.copy2(ROOT / m.path, probe / m.path)
            apply(probe, m)
        if not args.no_baseline:
            base = work / "baseline"
            copy_tree(base)
            tests = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
            t0 = time.perf_counter()
            rc, last = run_tests(base, tests, work / "baseline.log")
            ok = rc == 0
            print(f"{'baseline':40s} {'pass' if ok else 'FAIL':9s} "
                  f"{time.perf_counter() - t0:6.0f} s  {last}", flush=True)
            if not ok:
                print((work / "baseline.log").read_text()[-3000:])
                failed = True
        for i, m in enumerate(mutants):
            dest = work / f"m{i}"
            copy_tree(dest)
            apply(dest, m)
            t0 = time.perf_counter()
            # exit status 1: tests failed (killed); 0: all passed (survived); anything
            # else (collection error, interrupted, no tests) is not a kill either
            rc, last = run_tests(dest, m.tests, work / f"m{i}.log")
            verdict = {0: "SURVIVED", 1: "killed"}.get(rc, f"ERROR {rc}")
            failed |= rc != 1
            print(f"{m.name:40s} {verdict:9s} {time.perf_counter() - t0:6.0f} s  {last}",
                  flush=True)
            if not args.keep:
                shutil.rmtree(dest)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"copies and logs kept in {work}")
    print(f"{len(mutants)} mutants in {time.perf_counter() - start:.0f} s: "
          f"{'all killed' if not failed else 'FAILED (a survivor or a failing baseline)'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
