"""Gaussian multi-kernel basis, kernel centres and chunked sufficient statistics.

The design matrix of a VRVM has the columns

    phi(x) = [1, d(x), k(x, c_1), ..., k(x, c_m)]

(Bishop & Tipping 2000, eq. 1 with the paper's extra "linear" column d(x)).
With kernel widths L = {l_1, ..., l_p} the Gaussian multi-kernel is used in one
of two ways:

* ``"summed"``: one column per centre, k(x, c) = sum_l exp(-||x - c||^2 / l^2);
* ``"stacked"``: one column per (centre, width) pair, k_l(x, c) = exp(-||x - c||^2 / l^2),
  so that automatic relevance determination chooses the width of every centre.

Nothing here ever forms an N x N matrix: :func:`sufficient_statistics` walks the
rows in chunks and accumulates G = Phi^T Phi, h = Phi^T y and y^T y, which is all
the variational updates need (memory O(M^2 + chunk * M)).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import dsyrk
from scipy.spatial.distance import cdist, pdist

__all__ = [
    "BasisSpec",
    "StatisticsAccumulator",
    "SufficientStatistics",
    "choose_centres",
    "default_chunk_size",
    "median_distance",
    "median_neighbour_distance",
    "sufficient_statistics",
    "width_grid",
]

#: Memory budget of one chunk of the design matrix, in bytes (8 MiB). Small enough for
#: glibc to serve the chunk's temporaries from its heap (blocks above its mmap threshold,
#: 32 MiB at most, are fresh pages each time: measured, the design of 200,000 rows x
#: 1,000 columns took 0.52 s in 64 MiB chunks and 0.28 s in 8 MiB ones), large enough
#: for BLAS's dsyrk to run at full speed (the same rate from 1,024 rows up).
CHUNK_BYTES = 8 * 2**20


@dataclass(frozen=True)
class SufficientStatistics:
    """Everything the variational updates need from the data.

    Attributes
    ----------
    G : ndarray of shape (M, M)
        Phi^T Phi.
    h : ndarray of shape (M,)
        Phi^T y.
    yy : float
        y^T y.
    n : int or float
        Number of rows (the sum of the weights for weighted statistics).
    """

    G: np.ndarray
    h: np.ndarray
    yy: float
    n: int | float

    def __reduce__(self):
        """Pickled with G's upper triangle only when G is symmetric, as statistics of data
        are: half the bytes between the processes that add them up (the second pass of
        a two-stage fit sends a K x K matrix per member and part).

        Examples
        --------
        >>> import pickle
        >>> G = np.array([[2.0, 1.0], [1.0, 3.0]])
        >>> stats = SufficientStatistics(G, np.ones(2), 4.0, 5)
        >>> again = pickle.loads(pickle.dumps(stats))
        >>> bool(np.array_equal(again.G, G)), again.n
        (True, 5)
        """
        G = self.G
        square = isinstance(G, np.ndarray) and G.ndim == 2 and G.shape[0] == G.shape[1]
        if not (square and G.shape[0] > 1 and np.array_equal(G, G.T)):
            return (SufficientStatistics, (G, self.h, self.yy, self.n))
        rows, cols = _upper_indices(G.shape[0])
        return (_from_upper, (G[rows, cols], G.shape[0], self.h, self.yy, self.n))

    def __add__(self, other: SufficientStatistics) -> SufficientStatistics:
        """Statistics of the union of two disjoint row sets: every term is a sum over rows.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 2)); y = rng.normal(size=40)
        >>> spec = BasisSpec(centres=X[:5], widths=np.array([1.0]))
        >>> both = sufficient_statistics(spec, X[:15], y[:15]) + sufficient_statistics(
        ...     spec, X[15:], y[15:])
        >>> whole = sufficient_statistics(spec, X, y)
        >>> bool(np.allclose(both.G, whole.G) and np.allclose(both.h, whole.h)), both.n
        (True, 40)
        """
        if not isinstance(other, SufficientStatistics):
            return NotImplemented
        if other.h.shape != self.h.shape:
            raise ValueError(
                f"cannot add statistics of {self.h.size} and {other.h.size} basis functions"
            )
        return SufficientStatistics(
            self.G + other.G, self.h + other.h, self.yy + other.yy, self.n + other.n
        )

    def scaled(self, weight: float) -> SufficientStatistics:
        """The statistics of every row counted ``weight`` times (all sums times weight).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 2)); y = rng.normal(size=40)
        >>> spec = BasisSpec(centres=X[:5], widths=np.array([1.0]))
        >>> once = sufficient_statistics(spec, X, y)
        >>> twice = sufficient_statistics(spec, np.vstack([X, X]), np.concatenate([y, y]))
        >>> bool(np.allclose(once.scaled(2.0).G, twice.G)), once.scaled(2.0).n
        (True, 80.0)
        """
        w = float(weight)
        return SufficientStatistics(self.G * w, self.h * w, self.yy * w, self.n * w)

    @classmethod
    def zeros(cls, n_columns: int) -> SufficientStatistics:
        """Statistics of no rows (the start of a sum)."""
        return cls(np.zeros((n_columns, n_columns)), np.zeros(n_columns), 0.0, 0)

    def subset(self, columns: np.ndarray) -> SufficientStatistics:
        """Statistics of the sub-model that keeps only ``columns``."""
        columns = np.asarray(columns)
        return SufficientStatistics(
            self.G[np.ix_(columns, columns)], self.h[columns], self.yy, self.n
        )


@dataclass
class BasisSpec:
    """Which columns the design matrix has, and how to compute them.

    Parameters
    ----------
    centres : ndarray of shape (m, d)
        Kernel centres c_j.
    widths : ndarray of shape (p,)
        Kernel widths l_1..l_p (strictly positive).
    mode : {"stacked", "summed"}
        How the widths are combined (see module docstring).
    n_linear : int
        Number of user-supplied linear columns d(x).

    Examples
    --------
    >>> spec = BasisSpec(centres=np.array([[0.0], [1.0]]), widths=np.array([1.0, 2.0]),
    ...                  mode="stacked", n_linear=1)
    >>> spec.n_columns
    6
    >>> spec.design(np.array([[0.0]]), np.array([[3.0]])).round(4)
    array([[1.    , 3.    , 1.    , 0.3679, 1.    , 0.7788]])
    """

    centres: np.ndarray
    widths: np.ndarray
    mode: str = "stacked"
    n_linear: int = 0
    _centre_sq: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.centres = np.ascontiguousarray(self.centres, dtype=np.float64)
        self.widths = np.asarray(self.widths, dtype=np.float64).ravel()
        if self.mode not in ("stacked", "summed"):
            raise ValueError(f"kernel mode must be 'stacked' or 'summed', got {self.mode!r}")
        if self.widths.size == 0 or np.any(~np.isfinite(self.widths)) or np.any(self.widths <= 0):
            raise ValueError(f"kernel widths must be finite and > 0, got {self.widths.tolist()}")
        self._centre_sq = np.einsum("ij,ij->i", self.centres, self.centres)

    @property
    def n_centres(self) -> int:
        return self.centres.shape[0]

    @property
    def n_kernel_columns(self) -> int:
        return self.n_centres * (self.widths.size if self.mode == "stacked" else 1)

    @property
    def n_columns(self) -> int:
        """M, the number of candidate basis functions (bias + linear + kernel)."""
        return 1 + self.n_linear + self.n_kernel_columns

    def column_centre(self) -> np.ndarray:
        """Centre index of every column (-1 for the bias and the linear columns)."""
        head = np.full(1 + self.n_linear, -1)
        reps = self.widths.size if self.mode == "stacked" else 1
        return np.concatenate([head, np.tile(np.arange(self.n_centres), reps)])

    def column_width(self) -> np.ndarray:
        """Kernel width of every column (NaN for bias/linear and for summed kernels)."""
        head = np.full(1 + self.n_linear, np.nan)
        if self.mode == "summed":
            return np.concatenate([head, np.full(self.n_centres, np.nan)])
        return np.concatenate([head, np.repeat(self.widths, self.n_centres)])

    def design(
        self, X: np.ndarray, linear: np.ndarray | None, columns=None, out=None
    ) -> np.ndarray:
        """Design matrix rows phi(x) for a block of inputs.

        Parameters
        ----------
        X : ndarray of shape (n, d)
        linear : ndarray of shape (n, n_linear) or None
        columns : array of int, optional
            Compute only these columns (the active set); default all.
        out : ndarray of shape (n, len(columns)), optional
            A C-contiguous float64 array to write into (no new array per block).

        Returns
        -------
        ndarray of shape (n, len(columns))
        """
        n = X.shape[0]
        if columns is None:
            return self._full_design(X, linear, out=out)
        plan = self._plan(np.asarray(columns, dtype=np.intp))
        if plan.operand is not None:
            # stacked kernels: the rows [x, ||x||^2, 1] times plan.operand give every
            # column's exponent -||x - c||^2 / l^2 = (2 x.c - ||x||^2 - ||c||^2) / l^2
            # in one GEMM (0 for the bias and linear columns), then one clamp (squared
            # distances are >= 0) and one exponential in place: three passes over the
            # block, no gather or scatter
            rows = np.empty((n, X.shape[1] + 2), dtype=np.float64)
            rows[:, :-2] = X
            np.einsum("ij,ij->i", X, X, out=rows[:, -2])
            rows[:, -1] = 1.0
            out = np.matmul(rows, plan.operand, out=out)
            np.minimum(out, 0.0, out=out)
            np.exp(out, out=out)
        elif out is None:
            out = np.empty((n, plan.n_out), dtype=np.float64)
        for j, c in plan.head:
            out[:, j] = 1.0 if c == 0 else linear[:, c - 1]
        if plan.kern.size and plan.operand is None:
            # ||x - c||^2 = ||x||^2 + ||c||^2 - 2 x.c, one GEMM for all needed centres
            sq = np.einsum("ij,ij->i", X, X)[:, None] + plan.centre_sq[None, :]
            sq -= 2.0 * (X @ plan.centres.T)
            np.maximum(sq, 0.0, out=sq)
            if plan.inverse is not None:
                sq = sq[:, plan.inverse]
            acc = np.zeros_like(sq)
            for width in self.widths:
                acc += np.exp(sq * (-1.0 / width**2))
            out[:, plan.kern] = acc
        return out

    def _full_design(
        self, X: np.ndarray, linear: np.ndarray | None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """All columns, written into ``out`` (shape (n, M) or wider; allocated if None).

        Each width's kernel columns form one contiguous block, so the exponentials are
        written in place (no gather or scatter of the n x M block). Squared distances
        come from :func:`scipy.spatial.distance.cdist` (exact differences, no BLAS call
        with a 6-wide inner dimension), and see :func:`_gaussian_kernels` for the
        exponentials.
        """
        n, head, m = X.shape[0], 1 + self.n_linear, self.n_centres
        if out is None:
            out = np.empty((n, self.n_columns), dtype=np.float64)
        out[:, 0] = 1.0
        if self.n_linear:
            out[:, 1:head] = linear
        sq = cdist(X, self.centres, "sqeuclidean")
        if self.mode == "stacked":
            blocks = [out[:, head + k * m : head + (k + 1) * m] for k in range(self.widths.size)]
            _gaussian_kernels(sq, self.widths, blocks)
        else:
            block = out[:, head : head + m]
            if self.widths.size == 1:
                _gaussian_kernels(sq, self.widths, [block])
            else:
                tmp = [np.empty_like(sq) for _ in self.widths]
                _gaussian_kernels(sq, self.widths, tmp)
                np.add(tmp[0], tmp[1], out=block)
                for extra in tmp[2:]:
                    block += extra
        return out

    def _plan(self, columns: np.ndarray) -> _DesignPlan:
        """Index bookkeeping for a set of columns, memoised (prediction and online
        updates ask for the same active columns again and again)."""
        key = columns.tobytes()
        cache = self.__dict__.setdefault("_plans", {})
        plan = cache.get(key)
        if plan is None:
            n_head = 1 + self.n_linear
            is_head = columns < n_head
            head = [(int(j), int(columns[j])) for j in np.flatnonzero(is_head)]
            kern = np.flatnonzero(~is_head)
            kcol = columns[kern] - n_head
            centre = kcol % self.n_centres
            uniq, inverse = np.unique(centre, return_inverse=True)
            if uniq.size == kern.size and np.array_equal(uniq, centre):
                inverse = None  # columns already in centre order: no gather needed
            operand = None
            if self.mode == "stacked":
                # [x, ||x||^2, 1] @ operand = -||x - c||^2 / l^2 for every kernel column
                inv_l2 = 1.0 / self.widths[kcol // self.n_centres] ** 2
                operand = np.zeros((self.centres.shape[1] + 2, columns.size))
                operand[:-2, kern] = 2.0 * inv_l2 * self.centres[centre].T
                operand[-2, kern] = -inv_l2
                operand[-1, kern] = -inv_l2 * self._centre_sq[centre]
            plan = _DesignPlan(
                columns.size,
                head,
                kern,
                np.ascontiguousarray(self.centres[uniq]),
                self._centre_sq[uniq],
                inverse,
                operand,
            )
            if len(cache) > 64:
                cache.clear()
            cache[key] = plan
        return plan


def _gaussian_kernels(sq: np.ndarray, widths: np.ndarray, outs: list[np.ndarray]) -> None:
    """Write exp(-sq / l^2) for every width l into the matching array of ``outs``.

    Widest first. When a width is the previous one divided by 2^(j/2), j = 1..4 (the
    automatic grid l_min * 2^k always is: j = 2), its kernel is the previous kernel
    raised to the power 2^j, i.e. j squarings, since exp(-sq / l^2)^(r^2) =
    exp(-sq / (l / r)^2). A multiplication is cheaper than an exponential; the relative
    rounding error grows at most 2^j-fold (a few ulp).
    """
    order = np.argsort(widths)[::-1]
    previous = None
    for k in order:
        block = outs[k]
        j = None
        if previous is not None:
            power = float(np.log2((widths[previous] / widths[k]) ** 2))
            if 0.5 < power < 4.5 and abs(power - round(power)) < 1e-9:
                j = round(power)
        if j is None:
            np.multiply(sq, -1.0 / widths[k] ** 2, out=block)
            np.exp(block, out=block)
        else:
            np.multiply(outs[previous], outs[previous], out=block)
            for _ in range(j - 1):
                np.multiply(block, block, out=block)
        previous = k


@dataclass(frozen=True)
class _DesignPlan:
    n_out: int
    head: list
    kern: np.ndarray
    centres: np.ndarray
    centre_sq: np.ndarray
    inverse: np.ndarray | None
    operand: np.ndarray | None  # stacked kernels: (d + 2, n_out), see BasisSpec.design


def default_chunk_size(n_columns: int) -> int:
    """Rows per chunk so that one chunk of Phi fits in :data:`CHUNK_BYTES`."""
    return int(max(256, CHUNK_BYTES // (8 * max(n_columns, 1))))


@functools.lru_cache(maxsize=8)
def _upper_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(m)


def _from_upper(upper: np.ndarray, m: int, h, yy, n) -> SufficientStatistics:
    """The statistics pickled by :meth:`SufficientStatistics.__reduce__`."""
    rows, cols = _upper_indices(m)
    G = np.empty((m, m), dtype=upper.dtype)
    G[rows, cols] = upper
    G[cols, rows] = upper
    return SufficientStatistics(G, h, yy, n)


class StatisticsAccumulator:
    """G = Phi^T Phi, h = Phi^T y, y^T y and n of rows added batch by batch.

    G's upper triangle is updated in place by the BLAS symmetric rank-k update (dsyrk)
    with each chunk of Phi, written by the design straight into one reused buffer, and
    h by a product with the same chunk: adding rows allocates nothing of size M^2 or
    chunk x M, and the symmetric G is formed once, by :meth:`result`. Memory:
    O(M^2 + chunk_size * M).

    Parameters
    ----------
    spec : BasisSpec
    columns : array of int, optional
        The columns of ``spec`` to accumulate (in that order); default all.
    chunk_size : int, optional
        Rows per design chunk; default :func:`default_chunk_size`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2)); y = rng.normal(size=50)
    >>> spec = BasisSpec(centres=X[:10], widths=np.array([1.0]))
    >>> acc = StatisticsAccumulator(spec)
    >>> acc.add(X[:20], y[:20]); acc.add(X[20:], y[20:])
    >>> whole = sufficient_statistics(spec, X, y)
    >>> bool(np.allclose(acc.result().G, whole.G)), acc.result().n
    (True, 50)
    """

    def __init__(self, spec: BasisSpec, columns=None, *, chunk_size: int | None = None):
        self.spec = spec
        self.columns = None if columns is None else np.asarray(columns, dtype=np.intp)
        self.n_columns = spec.n_columns if columns is None else len(self.columns)
        self.chunk_size = chunk_size or default_chunk_size(self.n_columns)
        m = self.n_columns
        self._upper = np.zeros((m, m), dtype=np.float64, order="F")  # G's upper triangle
        self._h = np.zeros(m)
        self._buffer = np.empty((0, m), dtype=np.float64)
        self.yy = 0.0
        self.n: int | float = 0

    def add(self, X: np.ndarray, y: np.ndarray, linear=None, *, weight=None) -> None:
        """Add the rows ``X`` (targets ``y``, linear columns ``linear``); ``weight``: one
        non-negative number per row (a row of weight w counts as w rows)."""
        m = self.n_columns
        root = None
        y = np.asarray(y, dtype=np.float64)
        if weight is not None:
            w = _row_weights(weight, X.shape[0])
            root = np.sqrt(w)
            y = root * y  # sqrt(w) y: h = Phi^T W y and y^T W y below
            self.n = self.n + float(np.sum(w))
        else:
            self.n = self.n + X.shape[0]
        self.yy += float(y @ y)
        chunk = max(1, min(self.chunk_size, X.shape[0]))
        if self._buffer.shape[0] < chunk:
            self._buffer = np.empty((chunk, m), dtype=np.float64)
        for start in range(0, X.shape[0], chunk):
            stop = min(start + chunk, X.shape[0])
            block = self._buffer[: stop - start]  # contiguous: the design is written in place
            lin = None if linear is None else linear[start:stop]
            if self.columns is None:
                self.spec._full_design(X[start:stop], lin, out=block)
            else:
                self.spec.design(X[start:stop], lin, self.columns, out=block)
            if root is not None:
                block *= root[start:stop, None]
            # syrk on the C-ordered block seen as its transpose updates the upper triangle
            self._upper = dsyrk(
                1.0, block.T, beta=1.0, c=self._upper, trans=0, lower=0, overwrite_c=1
            )
            self._h += y[start:stop] @ block

    def result(self) -> SufficientStatistics:
        """The statistics of every row added so far."""
        m = self.n_columns
        # the strict lower triangle is still zero: G + G^T has the right off-diagonal
        # entries and twice the diagonal
        full = np.add(self._upper, self._upper.T, order="C")
        full.flat[:: m + 1] *= 0.5
        return SufficientStatistics(G=full, h=self._h.copy(), yy=self.yy, n=self.n)


def sufficient_statistics(
    spec: BasisSpec,
    X: np.ndarray,
    y: np.ndarray,
    linear: np.ndarray | None = None,
    *,
    chunk_size: int | None = None,
    columns: np.ndarray | None = None,
    weight=None,
) -> SufficientStatistics:
    """G = Phi^T Phi, h = Phi^T y, y^T y and n of the rows ``X`` (a
    :class:`StatisticsAccumulator` fed once).

    Memory is O(M^2 + chunk_size * M); G is updated by the BLAS symmetric rank-k
    update (dsyrk), the cheapest way to form Phi^T Phi. ``columns`` restricts Phi to
    those columns of ``spec`` (in that order), for example a fitted model's active set.
    ``weight`` (a number, or one non-negative number per row) gives the weighted
    statistics G = Phi^T W Phi, h = Phi^T W y, y^T W y and n = sum(w): a row of weight
    w counts as w rows (rows scaled by sqrt(w) before the update).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2)); y = rng.normal(size=50)
    >>> spec = BasisSpec(centres=X[:10], widths=np.array([1.0]))
    >>> one = sufficient_statistics(spec, X, y, chunk_size=50)
    >>> many = sufficient_statistics(spec, X, y, chunk_size=7)
    >>> bool(np.allclose(one.G, many.G) and np.allclose(one.h, many.h))
    True
    >>> twice = sufficient_statistics(spec, X, y, weight=np.full(50, 2.0))
    >>> bool(np.allclose(twice.G, 2 * one.G) and twice.n == 100)
    True
    """
    if weight is not None and np.ndim(weight) == 0:
        # one weight for every row: the unweighted statistics, scaled
        unweighted = sufficient_statistics(
            spec, X, y, linear, chunk_size=chunk_size, columns=columns
        )
        return unweighted.scaled(_row_weights(np.full(1, weight), 1)[0])
    acc = StatisticsAccumulator(spec, columns, chunk_size=chunk_size)
    acc.add(X, y, linear, weight=weight)
    return acc.result()


def _row_weights(weight, n_rows: int) -> np.ndarray:
    """Per-row weights as a checked float64 array."""
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != (n_rows,):
        raise ValueError(
            f"weight must be a number or have one value per row ({n_rows}), got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weight must be finite and non-negative")
    return w


def choose_centres(X: np.ndarray, max_basis: int, random_state=None) -> np.ndarray:
    """Training-row indices of the kernel centres.

    All rows when ``n <= max_basis``; otherwise ``max_basis`` rows chosen by
    k-means++ seeding (Arthur & Vassilvitskii 2007, via
    :func:`sklearn.cluster.kmeans_plusplus`) run on a uniform random subsample
    of at most ``10 * max_basis`` rows, so the cost does not grow with n.
    Duplicate input rows are never chosen twice.

    Examples
    --------
    >>> X = np.arange(20.0).reshape(-1, 1)
    >>> choose_centres(X, 50).size
    20
    >>> idx = choose_centres(X, 5, random_state=0)
    >>> idx.size, bool(np.all(np.diff(idx) > 0))
    (5, True)
    """
    from sklearn.cluster import kmeans_plusplus

    n = X.shape[0]
    if n <= max_basis:
        return np.arange(n)
    rng = np.random.default_rng(random_state)
    pool = np.sort(rng.choice(n, size=min(n, 10 * max_basis), replace=False))
    _, first = np.unique(X[pool], axis=0, return_index=True)
    pool = pool[np.sort(first)]
    if pool.size <= max_basis:
        return pool
    seed = int(rng.integers(2**31 - 1))
    _, local = kmeans_plusplus(X[pool], n_clusters=max_basis, random_state=seed)
    return np.sort(pool[local])


def median_distance(X: np.ndarray, random_state=None, max_points: int = 1000) -> float:
    """Median pairwise Euclidean distance (the "median heuristic" length scale).

    Computed on a random subsample of at most ``max_points`` rows.
    """
    rng = np.random.default_rng(random_state)
    if X.shape[0] > max_points:
        X = X[rng.choice(X.shape[0], size=max_points, replace=False)]
    d = pdist(X)
    d = d[d > 0]
    if d.size == 0:
        raise ValueError("all input rows are identical: kernel widths cannot be scaled")
    return float(np.median(d))


def median_neighbour_distance(X: np.ndarray) -> float:
    """Median distance from each row to its nearest distinct neighbour."""
    from scipy.spatial import cKDTree

    X = np.unique(X, axis=0)
    if X.shape[0] < 2:
        raise ValueError("all input rows are identical: kernel widths cannot be scaled")
    dist, _ = cKDTree(X).query(X, k=2)
    return float(np.median(dist[:, 1]))


def width_grid(centres: np.ndarray, n_widths: int, random_state=None) -> list[np.ndarray]:
    """Candidate width sets for ``kernel_widths="auto"``: windows of ``n_widths``
    consecutive values of the geometric grid l_min * 2**k, k = 0..5.

    l_min = max(s / 4, 2 r), with s the median pairwise distance between the centres
    and r the median distance from a centre to its nearest neighbour. The lower limit
    matters: a kernel narrower than the spacing of the centres can only interpolate
    single points, and type-II maximum likelihood over one alpha per basis function then
    prefers to fit the noise (Rasmussen & Quinonero-Candela 2005, "Healing the relevance
    vector machine through augmentation"), which the evidence cannot see.

    Examples
    --------
    >>> centres = np.linspace(0, 20, 101)[:, None]
    >>> [c.round(2).tolist() for c in width_grid(centres, 2)][:2]
    [[1.5, 3.0], [3.0, 6.0]]
    """
    scale = median_distance(centres, random_state)
    low = max(scale / 4.0, 2.0 * median_neighbour_distance(centres))
    grid = low * 2.0 ** np.arange(6)
    n_widths = int(min(max(n_widths, 1), grid.size))
    return [grid[i : i + n_widths] for i in range(grid.size - n_widths + 1)]
