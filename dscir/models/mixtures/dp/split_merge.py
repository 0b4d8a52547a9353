"""Split-merge moves of the DP mixture's partition (Jain & Neal 2004, the conjugate case).

One allocation move at a time (Gibbs or slice, one user at a time) cannot
split a cluster that merged two groups, nor merge two clusters quickly: each
user alone prefers where it is. A split-merge proposal moves a whole cluster
at once and is accepted by Metropolis-Hastings, so the chain keeps its law.

**Target.** The partition of the users with the sticks and components
integrated out (Dirichlet(a0) components over W words):

    p(z | x, alpha) ∝ alpha^K prod_k Gamma(m_k)
                      x prod_k Gamma(a0 W) / Gamma(a0 W + n_k) prod_w Gamma(a0 + c_kw) / Gamma(a0),

m_k, n_k and c_kw the users, tokens and word counts of cluster k (the
multinomial coefficients do not depend on z). Labels are the relabelling
move's (``dscir.models.mixtures.dp.relabel``); components and sticks are drawn
from their full conditionals given the new partition after the move (see
``DPMMModel``), so the composition keeps the joint law.

**The proposal** (restricted Gibbs sampling, Jain & Neal's algorithm with
``SCANS`` intermediate scans). Two distinct users i and j are drawn
uniformly; S are the other users of their clusters. The launch state puts i
on side A and j on side B, each user of S on a side uniformly, then runs
``SCANS`` restricted Gibbs scans of S between the two sides: user k goes to A
with probability ∝ m_A^-k x p(x_k | cluster A without k). Then

* i and j in one cluster: propose the split one more scan from the launch
  state gives, accepted with probability min(1, r),
  r = alpha Gamma(m_A) Gamma(m_B) / Gamma(m_A + m_B)
      x L(A) L(B) / L(A + B) / q(split | launch),
  q the product of the scan's probabilities and L a cluster's marginal
  likelihood;
* i and j in different clusters: propose their merge, accepted with 1 / r of
  the current split, q being the probability that one scan from the launch
  state gives the current split (computed, not drawn).

``tests/models/dpmm/test_split_merge.py`` checks the moves' law against the
enumerated posterior of a small problem.

Streams: proposal p of a call with key ``key`` draws from (key, p).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.models.mixtures.dp.allocation import RISING_PRODUCT, log_rising
from dscir.rng import mix_in, new_state, uniform

#: Restricted Gibbs scans from the random launch state before a proposal (Jain &
#: Neal's intermediate scans: a launch state that has separated the two groups).
SCANS = 3


#: Factors of the rising products multiplied before one log is taken (at most 23:
#: a word of count 8 may follow 15); each is a count plus a0 + j, under 10^7, so
#: the product stays far inside a double.
_FACTORS_PER_LOG = 16


@nb.njit(cache=True, nogil=True)
def _side_scores(indptr, indices, data, u, ca, cb, nm, own, a0, a0w):
    """log m + log p(x_u | the side's counts c, n without u) for sides A and B: the
    restricted conditional's unnormalised log weights, u being on side ``own``
    (its words are taken out of that side's counts here, not moved). One pass
    over u's words; short counts' rising factorials are multiplied, a log per
    ``_FACTORS_PER_LOG`` factors (log_rising's product, taken across words)."""
    out_a, out_b = own == 0, own == 1
    la, lb = math.log(nm[2] - out_a), math.log(nm[3] - out_b)
    pa = pb = 1.0
    length = factors = 0
    for p in range(indptr[u], indptr[u + 1]):
        w, x = indices[p], data[p]
        length += x
        xa = ca[w] - x * out_a + a0
        xb = cb[w] - x * out_b + a0
        if x > RISING_PRODUCT:
            la += log_rising(xa, x)
            lb += log_rising(xb, x)
            continue
        for j in range(x):
            pa *= xa + j
            pb *= xb + j
        factors += x
        if factors >= _FACTORS_PER_LOG:
            la += math.log(pa)
            lb += math.log(pb)
            pa = pb = 1.0
            factors = 0
    la += math.log(pa)
    lb += math.log(pb)
    if length:
        la -= log_rising(nm[0] - length * out_a + a0w, length)
        lb -= log_rising(nm[1] - length * out_b + a0w, length)
    return la, lb


@nb.njit(cache=True, nogil=True)
def _shift(indptr, indices, data, u, c, sign):
    """Add (sign 1) or remove (-1) user u's words in the side counts ``c``; its tokens."""
    tokens = 0
    for p in range(indptr[u], indptr[u + 1]):
        c[indices[p]] += sign * data[p]
        tokens += data[p]
    return tokens


@nb.njit(cache=True, nogil=True)
def _move(indptr, indices, data, u, ca, cb, nm, to_b):
    """Move user u's words and count to side B (``to_b``) from A, or back."""
    if to_b:
        tokens = _shift(indptr, indices, data, u, ca, -1)
        _shift(indptr, indices, data, u, cb, 1)
    else:
        tokens = _shift(indptr, indices, data, u, cb, -1)
        _shift(indptr, indices, data, u, ca, 1)
    sign = 1 if to_b else -1
    nm[0] -= sign * tokens
    nm[1] += sign * tokens
    nm[2] -= sign
    nm[3] += sign


@nb.njit(cache=True, nogil=True)
def _scan(indptr, indices, data, users, side, ca, cb, nm, a0, a0w, s, forced):
    """One restricted Gibbs scan of ``users`` between sides A (``side`` 0) and B (1);
    ``nm`` holds (n_A, n_B, m_A, m_B). With ``forced`` (a side per user) the scan
    moves each user to its forced side instead of drawing it. Returns the log
    probability of the sides it chose. A user's counts move only when it
    changes side."""
    log_q = 0.0
    for t in range(users.size):
        u = users[t]
        la, lb = _side_scores(indptr, indices, data, u, ca, cb, nm, side[t], a0, a0w)
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if forced.size:
            to_b = forced[t] == 1
        else:
            to_b = uniform(s) >= math.exp(la - log_norm)
        log_q += (lb if to_b else la) - log_norm
        if to_b != (side[t] == 1):
            _move(indptr, indices, data, u, ca, cb, nm, to_b)
            side[t] = 1 if to_b else 0
    return log_q


@nb.njit(cache=True, nogil=True)
def _log_likelihood_ratio(indptr, indices, data, members, ca, cb, nm, a0, a0w, seen):
    """log L(A) + log L(B) - log L(A + B) of the two sides' counts (each word once)."""
    out = (math.lgamma(a0w) - math.lgamma(nm[0] + a0w) - math.lgamma(nm[1] + a0w)
           + math.lgamma(nm[0] + nm[1] + a0w))
    la0 = math.lgamma(a0)
    for t in range(members.size):
        u = members[t]
        for p in range(indptr[u], indptr[u + 1]):
            w = indices[p]
            if seen[w]:
                continue
            seen[w] = True
            out += (math.lgamma(ca[w] + a0) + math.lgamma(cb[w] + a0)
                     - math.lgamma(ca[w] + cb[w] + a0) - la0)
    for t in range(members.size):
        u = members[t]
        for p in range(indptr[u], indptr[u + 1]):
            seen[indices[p]] = False
    return out


@nb.njit(cache=True, nogil=True)
def _members(z, i, j):
    """The users of i's and j's clusters, i and j last, and which cluster each of
    the others is in (0: i's, 1: j's)."""
    count = 0
    for u in range(z.size):
        count += (z[u] == z[i] or z[u] == z[j]) and u != i and u != j
    members = np.empty(count + 2, np.int64)
    current = np.empty(count, np.int64)
    count = 0
    for u in range(z.size):
        if (z[u] == z[i] or z[u] == z[j]) and u != i and u != j:
            members[count] = u
            current[count] = 0 if z[u] == z[i] else 1
            count += 1
    members[count], members[count + 1] = i, j
    return members, current


@nb.njit(cache=True, nogil=True)
def _launch(indptr, indices, data, members, ca, cb, s):
    """The random launch state: i on side A, j on side B, each other user on a
    uniform side. Returns (sides, [n_A, n_B, m_A, m_B]) with the sides' counts in
    ``ca``, ``cb``."""
    count = members.size - 2
    ca[:] = 0.0
    cb[:] = 0.0
    nm = np.zeros(4)
    nm[0] = _shift(indptr, indices, data, members[count], ca, 1)
    nm[1] = _shift(indptr, indices, data, members[count + 1], cb, 1)
    nm[2] = nm[3] = 1.0
    side = np.empty(count, np.int64)
    for t in range(count):
        side[t] = 0 if uniform(s) < 0.5 else 1
        if side[t] == 0:
            nm[0] += _shift(indptr, indices, data, members[t], ca, 1)
            nm[2] += 1
        else:
            nm[1] += _shift(indptr, indices, data, members[t], cb, 1)
            nm[3] += 1
    return side, nm


@nb.njit(cache=True, nogil=True)
def _propose(indptr, indices, data, z, next_label, n_words, a0, alpha, scans, s,
             ca, cb, seen):
    """One split-merge proposal on ``z`` (in place). Returns (1 split / -1 merge /
    0 rejected, the next unused label)."""
    i = int(uniform(s) * z.size)
    j = int(uniform(s) * (z.size - 1))
    j += j >= i
    zi, zj = z[i], z[j]
    members, current = _members(z, i, j)
    users = members[:-2]
    side, nm = _launch(indptr, indices, data, members, ca, cb, s)
    a0w = a0 * n_words
    none = np.empty(0, np.int64)
    for _ in range(scans):
        _scan(indptr, indices, data, users, side, ca, cb, nm, a0, a0w, s, none)
    forced = none if zi == zj else current  # a merge scores the current split
    log_q = _scan(indptr, indices, data, users, side, ca, cb, nm, a0, a0w, s, forced)
    log_r = (math.log(alpha) + math.lgamma(nm[2]) + math.lgamma(nm[3])
             - math.lgamma(nm[2] + nm[3])
             + _log_likelihood_ratio(indptr, indices, data, members, ca, cb, nm, a0, a0w, seen))
    if zi == zj:
        if math.log(uniform(s)) < log_r - log_q:
            z[i] = next_label
            for t in range(users.size):
                if side[t] == 0:
                    z[users[t]] = next_label
            return 1, next_label + 1
        return 0, next_label
    if math.log(uniform(s)) < log_q - log_r:
        for t in range(users.size):
            z[users[t]] = zi
        z[j] = zi
        return -1, next_label
    return 0, next_label


@nb.njit(cache=True, nogil=True)
def _proposals(indptr, indices, data, z, next_label, n_words, a0, alpha, scans, n, key):
    ca = np.zeros(n_words)
    cb = np.zeros(n_words)
    seen = np.zeros(n_words, np.bool_)
    splits = merges = 0
    for p in range(n):
        s = new_state(mix_in(key, p))
        moved, next_label = _propose(indptr, indices, data, z, next_label, n_words, a0,
                                     alpha, scans, s, ca, cb, seen)
        splits += moved == 1
        merges += moved == -1
    return splits, merges


def split_merge(indptr, indices, data, z: np.ndarray, n_words: int, *, a0: float,
                alpha: float, n_proposals: int, key: int, scans: int = SCANS
                ) -> tuple[np.ndarray, int, int]:
    """``n_proposals`` split-merge proposals on the partition ``z`` of the CSR users.

    A split gives its new cluster the next unused label (from ``z.max() + 1``).
    Returns (the new labels, splits accepted, merges accepted)."""
    z = np.array(z, np.int64)
    if z.size != len(indptr) - 1:
        raise DscirError(f"{z.size} labels for {len(indptr) - 1} users")
    if not (a0 > 0 and alpha > 0):
        raise DscirError(f"a0 and alpha must be > 0, got {a0} and {alpha}")
    if z.size < 2 or n_proposals <= 0:
        return z, 0, 0
    splits, merges = _proposals(np.asarray(indptr, np.int64), np.asarray(indices, np.int64),
                                np.asarray(data, np.int64), z, int(z.max()) + 1,
                                int(n_words), float(a0), float(alpha), int(scans),
                                int(n_proposals), np.uint64(key))
    return z, int(splits), int(merges)
