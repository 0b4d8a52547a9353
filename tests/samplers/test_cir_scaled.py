"""The fused steps (``cir.step_scaled``, ``sgrld.step_scaled``, ``Sampler.step_scaled``):
the minibatch counts x their scale formed inside the step give the state of
``step`` on the product, bit for bit (the chain digests rest on it)."""

import numpy as np
import pytest

from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers import cir, get_sampler


def _counts(shape, seed, share=0.1):
    """Sparse integer counts: mostly 0 (prior-only shapes below 1/2), some large."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(shape) < share, rng.integers(1, 5000, shape), 0)


@pytest.mark.parametrize("shape", [(3, 40), (20, 2048)])  # serial and parallel kernels
@pytest.mark.parametrize("factor", [0.0, 1 / 3, 97.25 / 7, 1e6])
def test_scaled_step_is_the_step_on_the_product_bit_for_bit(shape, factor):
    rng = np.random.default_rng(1)
    lt = np.log(rng.gamma(0.2, size=shape)) + 3.0
    counts = _counts(shape, 2)
    state = cir.State(lt)
    want = cir.step(state, 0.18, counts * factor, 0.86, derive(5, 6)).log_theta
    got = cir.step_scaled(state, 0.18, counts, factor, 0.86, derive(5, 6)).log_theta
    np.testing.assert_array_equal(got, want)
    # the product must matter: the test fails when the factor is not applied
    assert factor in (0.0, 1.0) or not np.array_equal(
        got, cir.step(state, 0.18, counts.astype(float), 0.86, derive(5, 6)).log_theta)


def test_sampler_step_scaled_is_step_on_the_product_for_every_sampler():
    rng = np.random.default_rng(3)
    theta = rng.gamma(1.0, size=(4, 30))
    counts = _counts((4, 30), 4, share=0.5)
    for name in ("scir", "sgrld", "sgld"):
        s = get_sampler(name)
        state = s.init(theta)
        want = s.step(state, 0.5, counts * 0.37, 0.01, derive(9))
        got = s.step_scaled(state, 0.5, counts, 0.37, 0.01, derive(9))
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("given_totals", [False, True])
def test_sgrld_fused_step_is_its_step_on_the_product(given_totals):
    """Whole rows, and a block of columns given its rows' totals. Guards against
    the factor dropped inside the fused kernel or the totals' counts unscaled."""
    rng = np.random.default_rng(7)
    theta = rng.gamma(0.3, size=(12, 3000))
    counts = _counts(theta.shape, 8, share=0.2)
    totals = np.stack([theta.sum(axis=1) * 1.7, counts.sum(axis=1) * 2.9]) if given_totals \
        else None
    s = get_sampler("sgrld")
    want = s.step(s.init(theta), 0.01, counts * 41.5, 0.03, derive(2), totals).theta
    got = s.step_scaled(s.init(theta), 0.01, counts, 41.5, 0.03, derive(2), totals).theta
    np.testing.assert_array_equal(got, want)


def test_inputs_untouched_and_bad_input_named():
    lt = np.log(np.random.default_rng(5).gamma(1.0, size=(2, 8)))
    counts = _counts((2, 8), 6, share=0.5)
    lt0, c0 = lt.copy(), counts.copy()
    cir.step_scaled(cir.State(lt), 0.5, counts, 2.0, 0.3, 1)
    np.testing.assert_array_equal(lt, lt0)
    np.testing.assert_array_equal(counts, c0)
    with pytest.raises(DscirError, match="integers of the state's shape"):
        cir.step_scaled(cir.State(lt), 0.5, counts * 1.5, 2.0, 0.3, 1)
    with pytest.raises(DscirError, match="integers of the state's shape"):
        cir.step_scaled(cir.State(lt), 0.5, counts[:, :4], 2.0, 0.3, 1)
    with pytest.raises(DscirError, match="factor"):
        cir.step_scaled(cir.State(lt), 0.5, counts, -1.0, 0.3, 1)
    with pytest.raises(DscirError, match="prior"):
        cir.step_scaled(cir.State(lt), 0.0, counts, 1.0, 0.3, 1)
