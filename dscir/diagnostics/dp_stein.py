"""Scores (gradients of the log posterior) of the DP mixture's sticks, for the
kernel Stein discrepancy of a fitted run (``dscir.diagnostics.ksd``). Pure numpy.

Parametrisation. The stick breaks v_j ~ Beta(1, alpha) of the leading J
components (in label order) are taken as u_j = logit v_j, on all of R: in v the
density behaves like v^m (1 - v)^(alpha - 1 + M) at the ends and the boundary
term of Stein's identity need not vanish. With v = 1 / (1 + exp(-u)),
dv/du = v (1 - v), so d log v / du = 1 - v and d log(1 - v) / du = -v.

Prior and Jacobian. log Beta(1, alpha) density (alpha - 1) log(1 - v_j) plus the
log Jacobian log v_j + log(1 - v_j) gives alpha log(1 - v_j) + log v_j, whose
derivative in u_j is 1 - (1 + alpha) v_j (alpha: the sample's own).

Likelihood. Each user's x_i is a mixture over all components,
p(x_i | v, phi) = sum_l w_l f(x_i | phi_l), w_l = v_l prod_{k<l} (1 - v_k), and
d log w_l / du_j is 1 - v_j for l = j, -v_j for l > j and 0 for l < j. Fisher's
identity (the derivative of log sum_l w_l f_il is the responsibility-weighted
derivative of log w_l, r_il = w_l f_il / sum_l' w_l' f_il') gives

    d log p(x | v, phi) / du_j = sum_i [r_ij (1 - v_j) - v_j sum_{l>j} r_il]
                               = m_j - v_j R_j,

    m_j = sum_i r_ij,   R_j = sum_i sum_{l>=j} r_il  (the users at or past j).

So the score is that of a Beta(1 + m_j, alpha + R_j - m_j) in logit,

    s_j(u) = 1 + m_j - (1 + alpha + R_j) v_j.

The components past the represented ones. A sample represents K components
and the mass rest = prod_{j<K} (1 - v_j) of all the others. They enter the sums
above as one more column past the last, r_i,rest ∝ rest x DirMult(x_i | a0):
their f averaged over their Dirichlet(a0) prior (as the held-out score does).
Averaging the product over users of the mixtures instead differs from this
only through pairs of users sharing one of those components, terms with the
factor sum_{l>=K} w_l^2 <= rest^2; rest lies below every user's slice variable.
A sample with fewer than J represented sticks is first completed by prior draws
(``dscir.api.stein``): no user is allocated past its components, so given the
allocations those are exact posterior draws.

m and R are estimated as the samplers do: the sums over a minibatch S of users
times N / |S| (unbiased), or over all users (exact; ``scale`` 1).
"""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError


def stick_logits(log_w: np.ndarray, log_rest: float) -> np.ndarray:
    """logit v_j [K] of a sample's represented sticks, from its log weights and the
    log mass of the others: v_j = w_j / (w_j + sum_{l>j} w_l + rest)."""
    log_w = np.asarray(log_w, np.float64)
    # after[j] = log(rest + sum_{l>j} w_l), summed from the end in log space
    after = np.logaddexp.accumulate(np.concatenate([[float(log_rest)], log_w[::-1]]))
    logit = log_w - after[: log_w.size][::-1]
    if not np.all(np.isfinite(logit)):
        raise DscirError("stick_logits: a stick break is 0 or 1 (its logit is not finite)")
    return logit


def stick_score(logit_v: np.ndarray, alpha: float, responsibilities: np.ndarray,
                scale: float = 1.0) -> np.ndarray:
    """The score s_j [J] in u_j = logit v_j of the J sticks ``logit_v`` (module).

    ``responsibilities`` [C] are sum_i r_il over the users of the data (or of a
    minibatch, then ``scale`` = N / |S|) for every component l in label order, the
    represented ones and then the rest's column (C > J); m_j is column j and R_j
    the sum of columns j and after.
    """
    u = np.asarray(logit_v, np.float64)
    r = np.asarray(responsibilities, np.float64)
    if u.ndim != 1 or r.ndim != 1 or r.size <= u.size:
        raise DscirError(f"stick_score: {u.size} sticks need more responsibility columns "
                         f"(all components and the rest's), got {r.shape}")
    v = 1.0 / (1.0 + np.exp(-u))
    m = scale * r[: u.size]
    tail = scale * np.cumsum(r[::-1])[::-1][: u.size]
    return 1.0 + m - (1.0 + float(alpha) + tail) * v
