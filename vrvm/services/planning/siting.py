"""Optimal siting: where k bases should stand, and the fewest bases that reach enough demand.

Candidates c (zones of a :class:`~vrvm.services.map.area.ServiceArea` or any points) and
demand zones z with weights w_z >= 0 give the **probability matrix**

.. math:: p_{cz} = \\frac{1}{D} \\sum_{d=1}^{D} G\\big(F_{c z d}(T)\\big),

the chance that a vehicle leaving c at departure d reaches z within T, averaged over the
D departure times: F is the ensemble's mixture cdf (the mean of its member cdfs, from
:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.predict_dist`) read through the
model's PIT map G (:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.recalibrate`),
exactly as :func:`vrvm.services.planning.fleet.fleet_coverage` gives P(best base within
T). :func:`siting_probabilities` predicts it block of candidates by block, so that the
(members x pairs) arrays stay a few MB whatever the number of pairs.

**Most demand reached by k bases** (:func:`site_bases`, on a given matrix
:func:`solve_siting`): each demand zone is served by its best open base, and the sites S
(|S| = k, containing the fixed bases F) maximise the demand-weighted
P(best base within T),

.. math:: f(S) = \\frac{\\sum_z w_z \\max_{c \\in S} p_{cz}}{\\sum_z w_z},

the maximum expected covering / facility-location objective (Daskin 1983; Cornuejols,
Fisher & Nemhauser 1977). It is solved **exactly** as a mixed-integer programme by HiGHS
(:func:`scipy.optimize.milp`) in the Benders form of the radius ("sorted levels")
formulation (Cornuejols, Nemhauser & Wolsey 1980; Elloumi 2010; Fischetti, Ljubic &
Sinnl 2017): binary y_c opens site c, theta_z is zone z's probability, and for every
level v

.. math:: \\theta_z \\le v + \\sum_c (p_{cz} - v)^+ \\, y_c ,

which for a 0/1 y is tight at v = max_{c in S} p_{cz}; the family describes the same
polytope as the classic assignment formulation x_{cz} <= y_c (its LP bound is as
strong) with a handful of rows per zone instead of |C| x |Z| variables. Measured on
300 candidates x 2,000 zones, k = 5 (``benchmarks/bench_siting.py``): the assignment
formulation ran out of 15 minutes (4.2 GB) in HiGHS; this one, with the cuts below,
takes seconds. The rows are generated as needed: the LP relaxation (HiGHS interior
point) is solved, each zone's most violated level is added (at the fractional y the
minimising v is the level where the open mass of the zone's best candidates reaches 1),
until no row is violated; then the MILP is solved and rows are added at its integer
answer until the master's bound meets the answer's true value. Two exact reductions
keep the programme small:

* a zone's probability never falls below L_z = max(the fixed bases' p_{cz}, the
  (n_free - k_free + 1)-th largest free p_{cz}) (at most n_free - k_free free candidates
  stay closed; Elloumi 2010), so levels below L_z are dropped;
* **Lagrangian fixing**: any multipliers u >= 0 of the rows give an upper bound
  U(u) of f over the candidates, and U_c(u) with y_c = 1 forced; a candidate with
  U_c(u) below the best value found (greedy improved by swaps) is in no better set and
  is removed before the MILP. The bound is computed from the multipliers directly, so
  it holds whatever the interior-point method's accuracy.

The answer is **certified optimal** when the best value found is within ``tol``
(relative, 1e-7 by default) of the upper bound; the result reports that bound and
HiGHS's own MIP gap and status beside it.

The **greedy** answer is reported beside the optimum: starting from the fixed bases,
add the candidate with the largest gain, k - |F| times. f is monotone submodular (a
facility-location function), so greedy reaches at least 1 - 1/e of the best gain
(Nemhauser, Wolsey & Fisher 1978); ``gap`` = (f(optimum) - f(greedy)) / f(optimum).

**Fewest bases** (:func:`fewest_bases`, :func:`solve_cover`): the smallest S containing F
such that the zones reached within T with probability at least p by some base of S
hold a share at least q of the demand,

.. math:: \\min \\sum_c y_c \\;\\text{s.t.}\\; u_z \\le \\sum_{c: p_{cz} \\ge p} y_c,\\;
          \\sum_z w_z u_z \\ge q \\sum_z w_z,\\; 0 \\le u_z \\le 1,

the location set covering problem (Toregas et al. 1971) for q = 1 and the partial
covering one for q < 1 (u may stay continuous: with y integral, u_z = 1 is feasible
wherever any base reaches z). Zones without demand need no base. The greedy answer adds
the candidate reaching the most demand not yet reached until the share is met. A target
no set reaches raises :class:`InfeasibleTarget`, naming the demand zones that no
candidate reaches with probability p.

Assumptions: a base stands at its point and departs at the given times; dispatch sends
the best open base (not the nearest); one vehicle per base, always available (no
queueing, as in Daskin's model without busy fractions).

References
----------
Cornuejols, Fisher & Nemhauser (1977), "Location of bank accounts to optimize float",
Management Science 23(8), 789-810.
Cornuejols, Nemhauser & Wolsey (1980), "A canonical representation of simple plant
location problems and its applications", SIAM J. Algebraic Discrete Methods 1(3), 261-272.
Daskin (1983), "A maximum expected covering location model", Transportation Science 17(1),
48-70.
Elloumi (2010), "A computational study of a new formulation for the p-median problem",
Discrete Applied Mathematics 158(7), 723-738 (radius formulation and its reductions).
Fischetti, Ljubic & Sinnl (2017), "Redesigning Benders decomposition for large-scale
facility location", Management Science 63(7), 2146-2162.
Nemhauser, Wolsey & Fisher (1978), "An analysis of approximations for maximizing
submodular set functions - I", Mathematical Programming 14, 265-294.
Toregas, Swain, ReVelle & Bergman (1971), "The location of emergency service facilities",
Operations Research 19(6), 1363-1373.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, sparse

from vrvm.engine import in_threads
from vrvm.services.answers.matrix import zone_points
from vrvm.services.answers.schedule import local_time
from vrvm.services.map.area import ServiceArea
from vrvm.services.planning.fleet import member_cdfs, zone_demand
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = [
    "SITE_COLUMNS",
    "InfeasibleTarget",
    "SitingResult",
    "SitingSolution",
    "area_points",
    "fewest_bases",
    "site_bases",
    "siting_probabilities",
    "solve_cover",
    "solve_siting",
]

SITE_COLUMNS = ["id", "lat", "lon", "fixed", "zones", "demand_share", "p_served"]
"""The chosen sites: id, point (degrees), whether it was fixed, the demand zones it
serves (it is their best base), their share of the demand and their demand-weighted
P(best base within T)."""
DEFAULT_TOL = 1e-7
"""Relative optimality tolerance: the answer is within this of the proven upper bound."""
_BLOCK_PAIRS = 32_768  # (candidate, zone) pairs predicted at once: a few MB each
_MAX_LP_ROUNDS = 60
_MAX_MIP_ROUNDS = 40
_SHOWN = 10  # ids named in a message
_log = logging.getLogger(__name__)


# ----------------------------------------------------------------------- checks
def _check_probabilities(prob) -> np.ndarray:
    prob = np.asarray(prob, dtype=np.float64)
    if prob.ndim != 2:
        raise ValueError(
            f"prob must be a (candidates, demand zones) matrix, got shape {prob.shape}"
        )
    if prob.shape[0] == 0:
        raise ValueError("no candidate sites")
    if prob.shape[1] == 0:
        raise ValueError("no demand zones")
    if not np.all(np.isfinite(prob) & (prob >= 0.0) & (prob <= 1.0)):
        raise ValueError("prob must hold probabilities in [0, 1]")
    return prob


def _check_weights(weights, n_zones: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_zones)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (n_zones,):
        raise ValueError(
            f"weights must hold one number per demand zone ({n_zones}), got shape {weights.shape}"
        )
    if not np.all(np.isfinite(weights) & (weights >= 0.0)):
        raise ValueError("weights must be finite non-negative numbers")
    if weights.sum() <= 0.0:
        raise ValueError("the demand is zero in every demand zone")
    return weights


def _check_fixed(fixed, n_candidates: int) -> np.ndarray:
    rows = np.asarray(list(fixed), dtype=np.int64).reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= n_candidates):
        raise ValueError(
            f"fixed sites must be candidate rows 0..{n_candidates - 1}, got "
            f"{rows[(rows < 0) | (rows >= n_candidates)].tolist()[:_SHOWN]}"
        )
    if np.unique(rows).size != rows.size:
        raise ValueError("fixed sites are repeated")
    return rows


def _check_count(k, n_candidates: int, n_fixed: int) -> int:
    if isinstance(k, bool) or not float(k).is_integer():
        raise ValueError(f"the number of bases must be a whole number, got {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"the number of bases must be at least 1, got {k}")
    if k < n_fixed:
        raise ValueError(f"{k} bases cannot keep the {n_fixed} fixed bases")
    if k > n_candidates:
        raise ValueError(f"{k} bases but only {n_candidates} candidate sites (fixed included)")
    return k


def _check_level(value, what: str) -> float:
    value = float(value)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{what} must be a probability in (0, 1], got {value:g}")
    return value


# ------------------------------------------------------------------ engine level
@dataclass(frozen=True)
class SitingSolution:
    """The answer of :func:`solve_siting` or :func:`solve_cover` on a given matrix.

    Attributes
    ----------
    chosen : numpy.ndarray
        Rows (candidates) of the optimal set, fixed ones included, ascending.
    objective : float
        :func:`solve_siting`: the demand-weighted P(best base within T) of ``chosen``;
        :func:`solve_cover`: the number of sites.
    greedy : numpy.ndarray
        Rows of the greedy answer, in the order added (fixed first).
    greedy_objective : float
        The same objective for ``greedy``.
    bound : float
        The proven bound: no set does better (an upper bound of the coverage; a lower
        bound of the number of sites).
    status : str
        ``"optimal"`` (proven within ``tol``), ``"time limit"`` (best found, with the
        bound) or ``"no choice"`` (the fixed sites, or all candidates, are the answer).
    mip_status : str
        HiGHS's message for the last MILP solved ("" when none was needed).
    mip_gap : float
        HiGHS's own relative MIP gap of that MILP (NaN when none was solved).
    solve_s : float
        Wall time of the solve, seconds.
    rounds : int
        LP and MILP solves.
    """

    chosen: np.ndarray
    objective: float
    greedy: np.ndarray
    greedy_objective: float
    bound: float
    status: str
    mip_status: str
    mip_gap: float
    solve_s: float
    rounds: int

    @property
    def gap(self) -> float:
        """How much worse greedy is, relative to the optimum: (opt - greedy) / opt for
        the coverage, (greedy - opt) / opt for the number of sites (0 when equal)."""
        if self.objective == self.greedy_objective:
            return 0.0
        return abs(self.objective - self.greedy_objective) / abs(self.objective)

    @property
    def bound_gap(self) -> float:
        """|bound - objective| / |objective|: 0 (to ``tol``) when proven optimal."""
        if self.objective == 0.0:
            return 0.0 if self.bound == 0.0 else np.inf
        return abs(self.bound - self.objective) / abs(self.objective)


def _coverage(prob: np.ndarray, floor: np.ndarray, rows) -> np.ndarray:
    """max(floor_z, max_{c in rows} p_cz) per zone."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return floor.copy()
    return np.maximum(floor, prob[rows].max(axis=0))


def _greedy(prob: np.ndarray, w: np.ndarray, floor: np.ndarray, picks: int) -> list[int]:
    """Add the row with the largest gain sum_z w_z (p_cz - current_z)^+, ``picks`` times
    (the first row wins a tie)."""
    current = floor.copy()
    chosen: list[int] = []
    for _ in range(picks):
        gains = np.maximum(prob - current[None, :], 0.0) @ w
        gains[chosen] = -np.inf
        best = int(np.argmax(gains))
        chosen.append(best)
        current = np.maximum(current, prob[best])
    return chosen


def _swaps(prob: np.ndarray, w: np.ndarray, floor: np.ndarray, start: list[int]) -> list[int]:
    """Best-improvement one-for-one swaps from ``start`` until none improves (a good
    incumbent for the Lagrangian fixing; optimality is proven by the MILP)."""
    chosen = list(start)
    value = _coverage(prob, floor, chosen) @ w
    for _ in range(100):
        best_value, best_move = value, None
        for i in range(len(chosen)):
            others = _coverage(prob, floor, chosen[:i] + chosen[i + 1 :])
            values = np.maximum(prob, others[None, :]) @ w
            values[chosen] = -np.inf
            j = int(np.argmax(values))
            if values[j] > best_value * (1 + 1e-12) + 1e-300:
                best_value, best_move = values[j], (i, j)
        if best_move is None:
            break
        chosen[best_move[0]] = best_move[1]
        value = best_value
    return chosen


class _Master:
    """The rows theta_z <= v + sum_c (p_cz - v)^+ y_c generated so far, and their solves."""

    def __init__(self, prob: np.ndarray, w: np.ndarray, floor: np.ndarray, picks: int):
        self.prob, self.w, self.floor, self.picks = prob, w, floor, picks
        self.n_c, self.n_z = prob.shape
        self.order = np.argsort(-prob, axis=0, kind="stable")
        self.sorted = np.take_along_axis(prob, self.order, axis=0)
        self.row_z: list[int] = []
        self.row_v: list[float] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.seen: set[tuple[int, float]] = set()
        self.alive = np.ones(self.n_c, dtype=bool)  # candidates not fixed at 0

    def separate(self, y: np.ndarray, theta: np.ndarray | None) -> int:
        """Add each zone's most violated row at (y, theta) (every zone's when theta is
        None); returns the number added."""
        cum = np.cumsum(y[self.order], axis=0)
        reached = cum >= 1.0 - 1e-9
        first = np.where(reached[-1], np.argmax(reached, axis=0), self.n_c - 1)
        v = np.maximum(self.sorted[first, np.arange(self.n_z)], self.floor)
        bound = v + np.maximum(self.prob - v[None, :], 0.0).T @ y
        if theta is None:
            zones = np.arange(self.n_z)
        else:
            zones = np.flatnonzero(theta > bound + 1e-9 * np.maximum(bound, 1e-12))
        added = 0
        for z in zones:
            key = (int(z), float(v[z]))
            if key in self.seen:
                continue
            self.seen.add(key)
            column = self.prob[:, z]
            rows = np.flatnonzero(column > v[z])
            self.row_z.append(int(z))
            self.row_v.append(float(v[z]))
            self.cols.append(rows)
            self.vals.append(column[rows] - v[z])
            added += 1
        return added

    def prune(self, y: np.ndarray, theta: np.ndarray) -> None:
        """Drop the rows slack at (y, theta) (they may come back when violated again)."""
        slack = np.fromiter(
            (
                v + c @ y[r] - theta[z]
                for z, v, r, c in zip(self.row_z, self.row_v, self.cols, self.vals, strict=True)
            ),
            dtype=np.float64,
            count=len(self.row_z),
        )
        kept = np.flatnonzero(slack <= 1e-6)
        self.row_z = [self.row_z[i] for i in kept]
        self.row_v = [self.row_v[i] for i in kept]
        self.cols = [self.cols[i] for i in kept]
        self.vals = [self.vals[i] for i in kept]
        self.seen = set(zip(self.row_z, self.row_v, strict=True))

    def _matrix(self, keep: np.ndarray) -> sparse.csr_matrix:
        """The rows as [-coef_y | e_z] on the candidates ``keep`` then the zones."""
        new = np.full(self.n_c, -1, dtype=np.int64)
        new[keep] = np.arange(keep.size)
        counts = np.fromiter((c.size for c in self.cols), dtype=np.int64, count=len(self.cols))
        rows = np.repeat(np.arange(len(self.cols)), counts)
        cols = new[np.concatenate(self.cols)] if counts.sum() else np.zeros(0, np.int64)
        vals = -np.concatenate(self.vals) if counts.sum() else np.zeros(0)
        live = cols >= 0
        n = len(self.row_z)
        y_part = sparse.csr_matrix((vals[live], (rows[live], cols[live])), shape=(n, keep.size))
        z_part = sparse.csr_matrix(
            (np.ones(n), (np.arange(n), np.asarray(self.row_z))), shape=(n, self.n_z)
        )
        return sparse.hstack([y_part, z_part], format="csr")

    def _bounds(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        top = np.maximum(self.floor, self.prob[keep].max(axis=0)) if keep.size else self.floor
        lower = np.concatenate([np.zeros(keep.size), self.floor])
        upper = np.concatenate([np.ones(keep.size), top])
        return lower, upper

    def solve_lp(self) -> tuple[np.ndarray, np.ndarray, float, np.ndarray] | None:
        """The LP relaxation: y, theta, a proven upper bound and each candidate's bound
        with y_c = 1 forced (Lagrangian, from the rows' multipliers); None on failure."""
        keep = np.flatnonzero(self.alive)
        a = self._matrix(keep)
        lower, upper = self._bounds(keep)
        cost = np.concatenate([np.zeros(keep.size), -self.w])
        card = np.concatenate([np.ones(keep.size), np.zeros(self.n_z)])[None, :]
        result = optimize.linprog(
            cost,
            A_ub=a,
            b_ub=np.asarray(self.row_v),
            A_eq=card,
            b_eq=[self.picks],
            bounds=np.column_stack([lower, upper]),
            method="highs-ipm",
        )
        if result.status != 0 or result.x is None:
            return None
        u = np.maximum(-np.asarray(result.ineqlin.marginals, dtype=np.float64), 0.0)
        upper_bound, forced = self._lagrangian(a, u, keep)
        y = np.zeros(self.n_c)
        y[keep] = np.clip(result.x[: keep.size], 0.0, 1.0)
        return y, result.x[keep.size :], upper_bound, forced

    def _lagrangian(
        self, a: sparse.csr_matrix, u: np.ndarray, keep: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """U(u) = max over the box and sum y = k of w.theta - u.(A x - b): for any u >= 0
        an upper bound; and U with y_c = 1 for each candidate (-inf when fixed at 0)."""
        reduced = np.asarray(a.T @ u).ravel()
        g_y = -reduced[: keep.size]  # each y_c's coefficient
        g_theta = self.w - reduced[keep.size :]
        lower, upper = self._bounds(keep)
        theta_part = np.where(
            g_theta > 0, g_theta * upper[keep.size :], g_theta * lower[keep.size :]
        )
        # sum y = k: the multiplier mu minimising mu k + sum_c (g_c - mu)^+ is the k-th
        # largest g_c (one-dimensional, piecewise linear)
        mu = float(np.sort(g_y)[::-1][self.picks - 1])
        y_part = mu * self.picks + np.maximum(g_y - mu, 0.0).sum()
        total = float(u @ np.asarray(self.row_v) + theta_part.sum() + y_part)
        forced = np.full(self.n_c, -np.inf)
        forced[keep] = total + np.minimum(g_y - mu, 0.0)
        return total, forced

    def solve_mip(self, tol: float, time_limit_s: float | None):
        """The MILP on the candidates still alive: (y, theta, upper bound, result)."""
        keep = np.flatnonzero(self.alive)
        lower, upper = self._bounds(keep)
        card = sparse.csr_matrix(np.concatenate([np.ones(keep.size), np.zeros(self.n_z)])[None, :])
        options = {"mip_rel_gap": tol, "disp": False}
        if time_limit_s is not None:
            options["time_limit"] = max(float(time_limit_s), 1e-3)
        result = optimize.milp(
            np.concatenate([np.zeros(keep.size), -self.w]),
            integrality=np.concatenate([np.ones(keep.size), np.zeros(self.n_z)]),
            bounds=optimize.Bounds(lower, upper),
            constraints=[
                optimize.LinearConstraint(self._matrix(keep), -np.inf, np.asarray(self.row_v)),
                optimize.LinearConstraint(card, self.picks, self.picks),
            ],
            options=options,
        )
        if result.x is None:
            return None, None, np.inf, result
        y = np.zeros(self.n_c)
        y[keep] = np.round(result.x[: keep.size])
        bound = -float(result.mip_dual_bound) if result.mip_dual_bound is not None else np.inf
        return y, result.x[keep.size :], bound, result


def solve_siting(
    prob,
    weights=None,
    k: int = 1,
    *,
    fixed: Sequence[int] = (),
    tol: float = DEFAULT_TOL,
    time_limit_s: float | None = None,
) -> SitingSolution:
    """The k sites maximising demand-weighted P(best base within T), proven optimal.

    Parameters
    ----------
    prob : array_like of shape (n_candidates, n_zones)
        p_cz: the probability that a base at candidate c reaches demand zone z within T.
    weights : array_like of shape (n_zones,), optional
        Demand per zone (non-negative, not all zero); default every zone alike.
    k : int
        Number of sites, fixed ones included (|fixed| <= k <= n_candidates).
    fixed : sequence of int
        Rows that are always chosen (existing bases).
    tol : float
        Relative optimality tolerance of the proof (and of HiGHS's MIP gap).
    time_limit_s : float, optional
        Stop the MILP after this long: the best set found and the bound are returned
        with status "time limit".

    Returns
    -------
    SitingSolution
        ``objective`` is the demand-weighted mean of max_{c in chosen} p_cz.

    Examples
    --------
    The best single site (row 2) is not part of the best pair, so greedy misses it:

    >>> prob = [[0.9, 0.0], [0.0, 0.9], [0.6, 0.6]]
    >>> best = solve_siting(prob, [1.0, 1.0], k=2)
    >>> best.chosen.tolist(), round(best.objective, 4), best.status
    ([0, 1], 0.9, 'optimal')
    >>> best.greedy.tolist(), round(best.greedy_objective, 4), round(best.gap, 4)
    ([2, 0], 0.75, 0.1667)
    """
    started = time.perf_counter()
    prob = _check_probabilities(prob)
    weights = _check_weights(weights, prob.shape[1])
    fixed_rows = _check_fixed(fixed, prob.shape[0])
    k = _check_count(k, prob.shape[0], fixed_rows.size)
    w = weights / weights.sum()
    n_c, n_z = prob.shape
    free = np.setdiff1d(np.arange(n_c), fixed_rows)
    picks = k - fixed_rows.size
    floor = _coverage(prob, np.zeros(n_z), fixed_rows)
    if picks == 0 or picks == free.size:  # nothing to choose
        chosen = np.sort(np.concatenate([fixed_rows, free[:picks]]).astype(np.int64))
        value = float(_coverage(prob, np.zeros(n_z), chosen) @ w)
        return SitingSolution(
            chosen,
            value,
            np.concatenate([fixed_rows, free[:picks]]),
            value,
            value,
            "no choice",
            "",
            np.nan,
            time.perf_counter() - started,
            0,
        )
    sub = prob[free]
    greedy_rows = _greedy(sub, w, floor, picks)  # from the fixed bases alone
    # the (n_free - picks + 1)-th largest free p_cz is always reached (Elloumi 2010): the
    # same value for every set of ``picks`` sites, so only the programme uses it
    floor = np.maximum(floor, -np.partition(-sub, free.size - picks, axis=0)[free.size - picks])
    greedy_value = float(_coverage(sub, floor, greedy_rows) @ w)
    best_rows = _swaps(sub, w, floor, greedy_rows)
    best_value = float(_coverage(sub, floor, best_rows) @ w)
    master = _Master(sub, w, floor, picks)
    y0 = np.zeros(free.size)
    y0[best_rows] = 1.0
    master.separate(y0, None)
    upper_bound, rounds = np.inf, 0
    mip_status, mip_gap, status = "", np.nan, "optimal"

    def proven() -> bool:
        return upper_bound - best_value <= tol * max(upper_bound, 1e-300)

    # LP relaxation: add violated rows until none (or the bound stops moving)
    previous = np.inf
    for _ in range(_MAX_LP_ROUNDS):
        solved = master.solve_lp()
        rounds += 1
        if solved is None:
            break
        y, theta, bound, forced = solved
        upper_bound = min(upper_bound, bound)
        # the LP's favourite sites, improved by swaps: a better incumbent fixes more
        start = np.argsort(-y, kind="stable")[:picks].tolist()
        rows = _swaps(sub, w, floor, start)
        value = float(_coverage(sub, floor, rows) @ w)
        if value > best_value:
            best_rows, best_value = rows, value
        master.alive &= forced >= best_value - 1e-12
        _log.debug(
            "LP %d: bound %.9f, best %.9f, %d rows, %d candidates alive, %.1f s",
            rounds,
            bound,
            best_value,
            len(master.row_z),
            master.alive.sum(),
            time.perf_counter() - started,
        )
        if proven():
            break
        added = master.separate(y, theta)
        if added == 0 or previous - bound <= 1e-3 * tol * max(bound, 1e-300):
            break
        previous = bound
    if solved is not None and not proven():
        master.prune(y, theta)  # rows slack at the LP optimum only slow the MILP down
        incumbent = np.zeros(free.size)
        incumbent[best_rows] = 1.0
        master.separate(incumbent, None)  # exact at the best set found
    # the MILP, with rows added at each integer answer until its bound meets its value
    while not proven() and rounds < _MAX_LP_ROUNDS + _MAX_MIP_ROUNDS:
        left = None
        if time_limit_s is not None:
            left = time_limit_s - (time.perf_counter() - started)
            if left <= 0:
                status = "time limit"
                break
        y, theta, bound, result = master.solve_mip(0.1 * tol, left)
        rounds += 1
        mip_status = str(result.message)
        mip_gap = float(result.mip_gap) if result.mip_gap is not None else np.nan
        if y is None:
            status = "time limit" if result.status == 1 else "failed"
            break
        rows = np.flatnonzero(y > 0.5).tolist()
        value = float(_coverage(sub, floor, rows) @ w)
        _log.debug(
            "MILP %d: bound %.9f, value %.9f, %d rows, %d candidates, %.1f s",
            rounds,
            bound,
            value,
            len(master.row_z),
            master.alive.sum(),
            time.perf_counter() - started,
        )
        if value > best_value:
            best_rows, best_value = rows, value
        if result.status == 0:
            upper_bound = min(upper_bound, bound)
        elif result.status == 1:
            status = "time limit"
            upper_bound = min(upper_bound, bound)
            break
        if master.separate(y, theta) == 0 and not proven():
            status = "stopped"  # the same MILP again would give the same answer
            break
    if not proven() and status == "optimal":
        status = "time limit" if time_limit_s is not None else "stopped"
    chosen = np.sort(np.concatenate([fixed_rows, free[best_rows]]).astype(np.int64))
    greedy = np.concatenate([fixed_rows, free[greedy_rows]]).astype(np.int64)
    return SitingSolution(
        chosen=chosen,
        objective=best_value,
        greedy=greedy,
        greedy_objective=greedy_value,
        bound=float(max(upper_bound, best_value)),
        status=status,
        mip_status=mip_status,
        mip_gap=mip_gap,
        solve_s=time.perf_counter() - started,
        rounds=rounds,
    )


class InfeasibleTarget(ValueError):
    """No set of sites reaches the demand asked for; ``unreachable`` holds the demand
    zones (rows, or ids from :func:`fewest_bases`) that no candidate reaches with the
    probability asked for."""

    def __init__(self, message: str, unreachable: Sequence):
        super().__init__(message)
        self.unreachable = list(unreachable)


def _cover_greedy(reach: np.ndarray, w: np.ndarray, covered: np.ndarray, need: float) -> list[int]:
    """Add the row reaching the most demand not yet reached until ``need`` is reached."""
    covered = covered.copy()
    chosen: list[int] = []
    while w[covered].sum() < need - 1e-12:
        gains = reach[:, ~covered] @ w[~covered]
        gains[chosen] = -np.inf
        best = int(np.argmax(gains))
        chosen.append(best)
        covered |= reach[best]
    return chosen


def solve_cover(
    prob,
    weights=None,
    min_probability: float = 0.9,
    *,
    share: float = 1.0,
    fixed: Sequence[int] = (),
    time_limit_s: float | None = None,
) -> SitingSolution:
    """The fewest sites such that a share ``share`` of the demand is reached within T
    with probability at least ``min_probability`` (see the module), proven optimal.

    Among the smallest sets, the one reaching the most demand is chosen. ``objective``
    (and ``greedy_objective``, ``bound``) count the sites, fixed ones included.

    Raises
    ------
    InfeasibleTarget
        When no set reaches the share; ``unreachable`` lists the demand zones (rows)
        with demand that no candidate reaches with that probability.

    Examples
    --------
    >>> prob = [[0.95, 0.2, 0.0], [0.0, 0.92, 0.91], [0.5, 0.9, 0.1]]
    >>> cover = solve_cover(prob, [1, 1, 1], min_probability=0.9)
    >>> cover.chosen.tolist(), cover.objective, cover.status
    ([0, 1], 2.0, 'optimal')
    >>> round(solve_cover(prob, [1, 1, 1], 0.9, share=0.6).objective)
    1
    >>> try:
    ...     solve_cover(prob, [1, 1, 1], min_probability=0.96)
    ... except InfeasibleTarget as error:
    ...     error.unreachable
    [0, 1, 2]
    """
    started = time.perf_counter()
    prob = _check_probabilities(prob)
    weights = _check_weights(weights, prob.shape[1])
    fixed_rows = _check_fixed(fixed, prob.shape[0])
    level = _check_level(min_probability, "the probability asked for")
    share = _check_level(share, "the share of demand")
    w = weights / weights.sum()
    n_c, n_z = prob.shape
    reach = prob >= level * (1.0 - 1e-12)
    unreachable = np.flatnonzero((w > 0) & ~reach.any(axis=0))
    if w[reach.any(axis=0)].sum() < share - 1e-12:
        reachable = 1.0 - w[unreachable].sum()
        raise InfeasibleTarget(
            f"no set of sites reaches {100 * share:.4g} % of the demand with probability "
            f"{level:g}: at most {100 * reachable:.4g} %; {unreachable.size} demand zone(s) are "
            f"reached by no candidate",
            unreachable.tolist(),
        )
    covered = reach[fixed_rows].any(axis=0) if fixed_rows.size else np.zeros(n_z, dtype=bool)
    free = np.setdiff1d(np.arange(n_c), fixed_rows)
    sub = reach[free]
    greedy_rows = _cover_greedy(sub, w, covered, share)
    greedy = np.concatenate([fixed_rows, free[greedy_rows]]).astype(np.int64)
    if not greedy_rows:  # the fixed sites reach enough
        return SitingSolution(
            np.sort(fixed_rows),
            float(fixed_rows.size),
            greedy,
            float(fixed_rows.size),
            float(fixed_rows.size),
            "no choice",
            "",
            np.nan,
            time.perf_counter() - started,
            0,
        )
    open_zones = np.flatnonzero((w > 0) & ~covered & sub.any(axis=0))
    need = share - w[covered].sum()
    a_y = sparse.csr_matrix(sub[:, open_zones].T.astype(np.float64))  # (zones, free)
    n_f, n_o = free.size, open_zones.size
    options = {"mip_rel_gap": 1e-9, "disp": False}
    if time_limit_s is not None:
        options["time_limit"] = max(float(time_limit_s), 1e-3)
    if share >= 1.0 - 1e-12:  # every zone with demand: set covering
        cost = np.ones(n_f)
        integrality = np.ones(n_f)
        bounds = optimize.Bounds(0, 1)
        constraints = [optimize.LinearConstraint(a_y, 1, np.inf)]
    else:  # partial covering; -0.5 sum w u picks the most demand among the smallest sets
        cost = np.concatenate([np.ones(n_f), -0.5 * w[open_zones]])
        integrality = np.concatenate([np.ones(n_f), np.zeros(n_o)])
        bounds = optimize.Bounds(0, 1)
        link = sparse.hstack([-a_y, sparse.identity(n_o, format="csr")], format="csr")
        demand_row = sparse.csr_matrix(np.concatenate([np.zeros(n_f), w[open_zones]])[None, :])
        constraints = [
            optimize.LinearConstraint(link, -np.inf, 0),
            optimize.LinearConstraint(demand_row, need - 1e-12, np.inf),
        ]
    result = optimize.milp(
        cost, integrality=integrality, bounds=bounds, constraints=constraints, options=options
    )
    mip_gap = float(result.mip_gap) if result.mip_gap is not None else np.nan
    if result.x is None:
        chosen_rows, status = list(greedy_rows), "time limit" if result.status == 1 else "failed"
        bound = float(fixed_rows.size + 1)
    else:
        chosen_rows = np.flatnonzero(np.round(result.x[:n_f]) > 0.5).tolist()
        if len(chosen_rows) > len(greedy_rows):  # a time limit can stop before greedy's size
            chosen_rows = list(greedy_rows)
        status = "optimal" if result.status == 0 else "time limit"
        dual = float(result.mip_dual_bound) if result.mip_dual_bound is not None else 1.0
        bound = float(fixed_rows.size + max(1, np.ceil(dual - 1e-6)))
    chosen = np.sort(np.concatenate([fixed_rows, free[chosen_rows]]).astype(np.int64))
    return SitingSolution(
        chosen=chosen,
        objective=float(chosen.size),
        greedy=greedy,
        greedy_objective=float(greedy.size),
        bound=min(bound, float(chosen.size)),
        status=status,
        mip_status=str(result.message),
        mip_gap=mip_gap,
        solve_s=time.perf_counter() - started,
        rounds=1,
    )


# ------------------------------------------------------------------- model level
def _text_ids(values) -> np.ndarray:
    return pd.Series(values).astype(str).str.strip().to_numpy(dtype=object)


def _site_table(points: pd.DataFrame, what: str) -> pd.DataFrame:
    """``id``, ``lat``, ``lon`` (and ``weight`` when given) from a points table: an ``id``
    column, else ``label`` (:func:`vrvm.services.answers.matrix.read_points`), ``zone``
    or ``name``."""
    if not isinstance(points, pd.DataFrame):
        raise ValueError(f"the {what} sites must be a table with id, lat and lon")
    if len(points) == 0:
        raise ValueError(f"no {what} sites")
    id_col = next((c for c in ("id", "label", "zone", "name") if c in points.columns), None)
    missing = [c for c in ("lat", "lon") if c not in points.columns]
    if id_col is None or missing:
        raise ValueError(
            f"the {what} sites need columns id (or label, zone, name), lat and lon; found: "
            f"{', '.join(map(str, points.columns))}"
        )
    ids = _text_ids(points[id_col])
    repeated = pd.Series(ids)[pd.Series(ids).duplicated()].unique().tolist()
    if repeated:
        raise ValueError(f"{what} ids must differ; repeated: {repeated[:_SHOWN]}")
    lat = pd.to_numeric(points["lat"], errors="coerce").to_numpy(np.float64)
    lon = pd.to_numeric(points["lon"], errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(~((np.abs(lat) <= 90) & (np.abs(lon) <= 180)))
    if bad.size:
        raise ValueError(
            f"{what} sites without a valid point (lat, lon in degrees): "
            f"{ids[bad].tolist()[:_SHOWN]}"
        )
    table = pd.DataFrame({"id": ids, "lat": lat, "lon": lon})
    if "weight" in points.columns:
        table["weight"] = pd.to_numeric(points["weight"], errors="coerce").to_numpy(np.float64)
    return table


def area_points(
    area: ServiceArea,
    zones: Sequence[str] | None = None,
    *,
    what: str = "candidate",
    demand=None,
) -> pd.DataFrame:
    """Zones of a service area as sites: ``id`` (the zone id), ``lat``, ``lon``.

    Every zone when ``zones`` is None. For ``what="demand"`` also ``weight``, the
    zone's demand by :func:`vrvm.services.planning.fleet.zone_demand`: ``demand`` (one
    weight per zone of the area, such as an uploaded file's), training-trip origins by
    default. Raises ValueError naming the ids not in the area.

    Examples
    --------
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a", "b"], "label": ["Zone 1", "Zone 2"],
    ...                      "lat": [0.0, 0.1], "lon": [0.0, 0.0]})
    >>> area = ServiceArea(grid, 8, (0, 0, 0.1, 0), ViewState(0, 0, 10))
    >>> area_points(area, ["b"])["id"].tolist()
    ['b']
    >>> area_points(area, ["b", "x"], what="demand")
    Traceback (most recent call last):
    ...
    ValueError: demand zone ids not in the service area: ['x']
    >>> area_points(area, what="demand", demand=[3.0, 1.0])["weight"].tolist()
    [3.0, 1.0]
    """
    known = pd.Index(area.grid["zone"].astype(str))
    zones = known.tolist() if zones is None else [str(z) for z in zones]
    unknown = [z for z in zones if z not in known]
    if unknown:
        raise ValueError(f"{what} zone ids not in the service area: {unknown[:_SHOWN]}")
    if not zones:
        raise ValueError(f"no {what} zones")
    points = zone_points(area, zones).rename(columns={"label": "id"})
    if what == "demand":
        weights, _ = zone_demand(area, demand)
        points["weight"] = weights[known.get_indexer(zones)]
    return points


def _departures(model: TravelTimeModel, departures) -> tuple[pd.Timestamp, ...]:
    items = (
        [departures]
        if isinstance(departures, str | pd.Timestamp)
        or not isinstance(departures, Sequence | pd.Index | np.ndarray)
        else list(departures)
    )
    if not items:
        raise ValueError("no departure times")
    return tuple(local_time(item, model.tz_, "departure") for item in items)


def _check_within(within_s) -> float:
    within_s = float(within_s)
    if not (np.isfinite(within_s) and within_s > 0):
        raise ValueError(f"the time limit T must be a positive number of seconds, got {within_s:g}")
    return within_s


class _Block:
    """p_cz of the candidates [start, stop) at one departure (called by a worker thread)."""

    def __init__(self, model, candidates, demand, within_s):
        self.model, self.within_s = model, within_s
        self.c_lat = candidates["lat"].to_numpy(np.float64)
        self.c_lon = candidates["lon"].to_numpy(np.float64)
        self.demand = demand

    def __call__(self, item: tuple[pd.Timestamp, int, int]) -> np.ndarray:
        departure, start, stop = item
        cdfs = member_cdfs(  # (M, rows, Z): as fleet coverage reads a base's trips
            self.model,
            self.c_lat[start:stop],
            self.c_lon[start:stop],
            self.demand,
            departure,
            self.within_s,
        )
        return self.model.recalibrate(cdfs.mean(axis=0))  # G(F(T)), F the members' mean


def siting_probabilities(
    model: TravelTimeModel,
    candidates: pd.DataFrame,
    demand: pd.DataFrame,
    within_s: float,
    departures,
    *,
    block_pairs: int = _BLOCK_PAIRS,
    threads: int | None = None,
) -> np.ndarray:
    """p_cz = mean over departures of G(F_cz(T)) (see the module), (candidates, zones).

    ``candidates`` and ``demand`` are tables with ``lat`` and ``lon`` (degrees); the
    pairs are predicted ``block_pairs`` at a time (whole candidates per block), one
    block per thread, so memory is the result plus a few MB per thread.
    """
    within_s = _check_within(within_s)
    stamps = _departures(model, departures)
    n_c, n_z = len(candidates), len(demand)
    if n_c == 0 or n_z == 0:
        raise ValueError("no candidate sites" if n_c == 0 else "no demand zones")
    per_block = max(1, int(block_pairs) // n_z)
    items = [(d, s, min(s + per_block, n_c)) for d in stamps for s in range(0, n_c, per_block)]
    prob = np.zeros((n_c, n_z))
    block = _Block(model, candidates, demand, within_s)
    for (_, start, stop), part in zip(
        items, in_threads(block, items, threads=threads), strict=True
    ):
        prob[start:stop] += part
    return np.clip(prob / len(stamps), 0.0, 1.0)


@dataclass(frozen=True)
class SitingResult:
    """Chosen sites and how well they reach the demand (:func:`site_bases`,
    :func:`fewest_bases`).

    Attributes
    ----------
    problem : str
        ``"coverage"`` (k sites, most demand reached) or ``"cover"`` (fewest sites).
    sites : pandas.DataFrame
        :data:`SITE_COLUMNS`, fixed sites first, then by demand share.
    objective, greedy_objective : float
        Demand-weighted P(best base within T) (coverage) or number of sites (cover),
        of the optimum and of the greedy answer.
    gap : float
        (optimum - greedy) / optimum for the coverage, (greedy - optimum) / optimum
        for the number of sites.
    bound : float
        The proven bound on the optimum (see :class:`SitingSolution`).
    status, mip_status : str
        "optimal", "time limit", ... and HiGHS's message.
    mip_gap : float
        HiGHS's own relative MIP gap (NaN when no MILP was needed).
    solve_s, predict_s : float
        Seconds spent solving, and predicting the probability matrix.
    greedy_sites : tuple of str
        The greedy answer's ids, in the order added.
    within_s : float
    departures : tuple of pandas.Timestamp
    min_probability, share : float or None
        The cover's target (None for the coverage problem).
    covered_share : float
        Share of the demand reached with probability >= ``min_probability`` (cover;
        NaN for the coverage problem).
    candidates, demand : pandas.DataFrame
        ``id``, ``lat``, ``lon`` (and ``fixed``; ``weight``) as solved.
    prob : numpy.ndarray
        (candidates, demand zones) probabilities.
    chosen : numpy.ndarray
        Rows of ``candidates`` chosen.
    """

    problem: str
    sites: pd.DataFrame
    objective: float
    greedy_objective: float
    gap: float
    bound: float
    status: str
    mip_status: str
    mip_gap: float
    solve_s: float
    predict_s: float
    greedy_sites: tuple[str, ...]
    within_s: float
    departures: tuple[pd.Timestamp, ...]
    min_probability: float | None
    share: float | None
    covered_share: float
    candidates: pd.DataFrame = field(repr=False)
    demand: pd.DataFrame = field(repr=False)
    prob: np.ndarray = field(repr=False)
    chosen: np.ndarray = field(repr=False)

    def demand_table(self) -> pd.DataFrame:
        """One row per demand zone: ``id``, ``lat``, ``lon``, ``weight``, ``site`` (the
        chosen site reaching it with the highest probability; the first chosen wins a
        tie) and ``probability`` (P(that site within T)); for the cover also
        ``reached`` (probability >= min_probability)."""
        sub = self.prob[self.chosen]
        best = np.argmax(sub, axis=0)
        table = self.demand[["id", "lat", "lon", "weight"]].copy()
        table["site"] = self.candidates["id"].to_numpy()[self.chosen][best]
        table["probability"] = sub[best, np.arange(sub.shape[1])]
        if self.min_probability is not None:
            table["reached"] = table["probability"] >= self.min_probability * (1 - 1e-12)
        return table


def _merge_fixed(candidates: pd.DataFrame, fixed) -> tuple[pd.DataFrame, np.ndarray]:
    """Candidates with the fixed bases (ids of candidates, or a points table whose ids
    not among the candidates are added), a ``fixed`` flag, and the fixed rows."""
    table = candidates.drop(columns=[c for c in ("weight",) if c in candidates]).copy()
    table["fixed"] = False
    if fixed is None:
        return table, np.zeros(0, dtype=np.int64)
    index = pd.Index(table["id"])
    if isinstance(fixed, pd.DataFrame):
        points = _site_table(fixed, "fixed")
        rows = index.get_indexer(points["id"])
        known = rows >= 0
        far = known & ~(
            np.isclose(table["lat"].to_numpy()[np.maximum(rows, 0)], points["lat"], atol=1e-6)
            & np.isclose(table["lon"].to_numpy()[np.maximum(rows, 0)], points["lon"], atol=1e-6)
        )
        if far.any():
            raise ValueError(
                "fixed bases share a candidate's id but not its point: "
                f"{points['id'].to_numpy()[far].tolist()[:_SHOWN]}"
            )
        extra = points.loc[~known, ["id", "lat", "lon"]].assign(fixed=True)
        table = pd.concat([table, extra], ignore_index=True)
        rows = np.concatenate([rows[known], len(candidates) + np.arange(int((~known).sum()))])
    else:
        ids = _text_ids(list(fixed))
        if pd.Series(ids).duplicated().any():
            raise ValueError(
                f"fixed base ids must differ; repeated: "
                f"{pd.Series(ids)[pd.Series(ids).duplicated()].tolist()[:_SHOWN]}"
            )
        rows = index.get_indexer(ids)
        if (rows < 0).any():
            raise ValueError(
                f"unknown fixed base ids (not candidates): {ids[rows < 0].tolist()[:_SHOWN]}"
            )
    rows = np.asarray(rows, dtype=np.int64)
    table.loc[rows, "fixed"] = True
    return table.reset_index(drop=True), rows


def _demand_weights(demand: pd.DataFrame, weights) -> np.ndarray:
    if weights is None and "weight" in demand.columns:
        weights = demand["weight"].to_numpy(np.float64)
        bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))
        if bad.size:
            raise ValueError(
                f"demand weights must be non-negative numbers; bad at ids "
                f"{demand['id'].to_numpy()[bad].tolist()[:_SHOWN]}"
            )
    return _check_weights(weights, len(demand))


def _prepare(model, candidates, demand, within_s, departures, fixed, weights, block_pairs):
    within_s = _check_within(within_s)
    stamps = _departures(model, departures)
    candidates = _site_table(candidates, "candidate")
    demand = _site_table(demand, "demand")
    sites, fixed_rows = _merge_fixed(candidates, fixed)
    w = _demand_weights(demand, weights)
    demand = demand.assign(weight=w)
    started = time.perf_counter()
    prob = siting_probabilities(model, sites, demand, within_s, stamps, block_pairs=block_pairs)
    return within_s, stamps, sites, demand, fixed_rows, prob, time.perf_counter() - started


def _result(
    problem,
    solution,
    sites,
    demand,
    prob,
    within_s,
    stamps,
    predict_s,
    min_probability=None,
    share=None,
) -> SitingResult:
    w = demand["weight"].to_numpy(np.float64)
    w = w / w.sum()
    chosen = solution.chosen
    sub = prob[chosen]
    best = np.argmax(sub, axis=0)
    p_best = sub[best, np.arange(sub.shape[1])]
    served = best[None, :] == np.arange(chosen.size)[:, None]
    load = served @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        p_served = np.where(load > 0, (served @ (w * p_best)) / load, np.nan)
    table = sites.iloc[chosen][["id", "lat", "lon", "fixed"]].reset_index(drop=True)
    table["zones"] = served.sum(axis=1).astype(np.int64)
    table["demand_share"] = load
    table["p_served"] = p_served
    table = table.sort_values(["fixed", "demand_share"], ascending=[False, False], kind="stable")
    covered = np.nan
    if min_probability is not None:
        covered = float(w[p_best >= min_probability * (1 - 1e-12)].sum())
    return SitingResult(
        problem=problem,
        sites=table.reset_index(drop=True),
        objective=solution.objective,
        greedy_objective=solution.greedy_objective,
        gap=solution.gap,
        bound=solution.bound,
        status=solution.status,
        mip_status=solution.mip_status,
        mip_gap=solution.mip_gap,
        solve_s=solution.solve_s,
        predict_s=predict_s,
        greedy_sites=tuple(sites["id"].to_numpy()[solution.greedy].tolist()),
        within_s=within_s,
        departures=stamps,
        min_probability=min_probability,
        share=share,
        covered_share=covered,
        candidates=sites,
        demand=demand,
        prob=prob,
        chosen=chosen,
    )


def site_bases(
    model: TravelTimeModel,
    candidates: pd.DataFrame,
    demand: pd.DataFrame,
    k: int,
    within_s: float,
    departures,
    *,
    fixed=None,
    weights=None,
    tol: float = DEFAULT_TOL,
    time_limit_s: float | None = None,
    block_pairs: int = _BLOCK_PAIRS,
) -> SitingResult:
    """The k bases maximising demand-weighted P(best base within T), proven optimal.

    Parameters
    ----------
    model : TravelTimeModel
    candidates, demand : pandas.DataFrame
        Sites with ``id`` (or ``label`` as :func:`~vrvm.services.answers.matrix.read_points`
        gives, ``zone``, ``name``), ``lat``, ``lon``; :func:`area_points` for zones of a
        service area. ``demand`` may hold a ``weight`` column.
    k : int
        Number of bases, fixed ones included.
    within_s : float
        T, seconds.
    departures : datetime-like or sequence of them
        Departure time(s); the probabilities are averaged over them. A naive time is a
        wall-clock time in the model's time zone.
    fixed : sequence of str or pandas.DataFrame, optional
        Existing bases kept open: candidate ids, or points (added as sites when their
        id is not a candidate's).
    weights : array_like, optional
        Demand per demand zone (else the ``weight`` column, else all alike).
    tol, time_limit_s :
        As for :func:`solve_siting`.
    block_pairs : int
        Pairs predicted at once.

    Returns
    -------
    SitingResult
    """
    within_s, stamps, sites, demand, fixed_rows, prob, predict_s = _prepare(
        model, candidates, demand, within_s, departures, fixed, weights, block_pairs
    )
    solution = solve_siting(
        prob, demand["weight"].to_numpy(), k, fixed=fixed_rows, tol=tol, time_limit_s=time_limit_s
    )
    return _result("coverage", solution, sites, demand, prob, within_s, stamps, predict_s)


def fewest_bases(
    model: TravelTimeModel,
    candidates: pd.DataFrame,
    demand: pd.DataFrame,
    within_s: float,
    departures,
    min_probability: float,
    *,
    share: float = 1.0,
    fixed=None,
    weights=None,
    time_limit_s: float | None = None,
    block_pairs: int = _BLOCK_PAIRS,
) -> SitingResult:
    """The fewest bases reaching a share ``share`` of the demand within T with probability
    at least ``min_probability`` (parameters as :func:`site_bases`).

    Raises
    ------
    InfeasibleTarget
        Naming (``unreachable``: ids) the demand zones no candidate reaches with that
        probability.
    """
    level = _check_level(min_probability, "the probability asked for")
    share = _check_level(share, "the share of demand")
    within_s, stamps, sites, demand, fixed_rows, prob, predict_s = _prepare(
        model, candidates, demand, within_s, departures, fixed, weights, block_pairs
    )
    try:
        solution = solve_cover(
            prob,
            demand["weight"].to_numpy(),
            level,
            share=share,
            fixed=fixed_rows,
            time_limit_s=time_limit_s,
        )
    except InfeasibleTarget as error:
        ids = demand["id"].to_numpy()[error.unreachable].tolist()
        shown = ", ".join(map(str, ids[:_SHOWN])) + (" ..." if len(ids) > _SHOWN else "")
        raise InfeasibleTarget(f"{error}: {shown}", ids) from None
    return _result(
        "cover",
        solution,
        sites,
        demand,
        prob,
        within_s,
        stamps,
        predict_s,
        min_probability=level,
        share=share,
    )
