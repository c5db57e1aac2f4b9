r"""Trips with stops: the total time through ordered stops, each leg leaving on arrival.

An ambulance's call has legs: base -> scene -> hospital, with time spent at the scene.
For stops :math:`P_0, \dots, P_K` (two to :data:`MAX_STOPS`), a departure :math:`t_0`
from :math:`P_0` and a dwell :math:`D_k \ge 0` at each intermediate stop
(:class:`Dwell`: minutes, a log-normal by median and 90th percentile, or an empirical
sample of dwell minutes), leg :math:`k` goes from :math:`P_{k-1}` to :math:`P_k`,
leaves :math:`S_k` seconds after :math:`t_0` and takes :math:`L_k`:

.. math::

    S_1 = 0, \qquad A_k = S_k + L_k, \qquad S_{k+1} = A_k + D_k, \qquad
    \text{total} = A_K .

:func:`trip_with_stops` returns the distribution of the total (:class:`StopsTrip`:
cdf, quantiles, median, interval, mean, P(total within T)) and each leg's departure,
travel time and arrival at its stop as clock times.

Assumptions
-----------
1. *Legs are conditionally independent given their departure times.* Given that leg
   :math:`k` leaves at the clock time :math:`t_0 + S_k`, its time :math:`L_k` follows
   the model's predictive for that leg at that departure,
   :math:`F_k(\cdot \mid t_0 + S_k)` (:meth:`~vrvm.TravelTimeModel.predict_dist`), and
   depends on the earlier legs only through when it leaves. A slow first leg makes
   the second leave later, into heavier or lighter traffic, which is the dependence
   that matters around a rush hour; what is not modelled is a shared cause beyond the
   clock (a city-wide incident, the same driver), which would correlate the legs
   positively and widen the total's interval.
2. *Dwells are independent* of the travel times and of one another.

Then :math:`P(A_k \le a) = E\,[F_k(a - S_k \mid t_0 + S_k)]`, the law of
:math:`S_{k+1}` is that of :math:`A_k` convolved with :math:`D_k`, and
:math:`P(\text{total} \le t) = E\,[F_K(t - S_K \mid t_0 + S_K)]`.

Numerics
--------
* Each :math:`S_k` is a discrete distribution on a lattice :math:`o_k + j h` of step
  :math:`h` (``step_s``, 15 s); :math:`S_1` is the point 0.
* The model is asked once per leg, in one ``predict_dist`` call, for the departure
  times on a grid of ``departure_step_s`` (60 s) from :math:`t_0` that the lattice
  reaches; the predictive at a departure :math:`t` between grid times
  :math:`g_i \le t < g_{i+1}` is the linear interpolation
  :math:`(1 - a) F(\cdot \mid g_i) + a F(\cdot \mid g_{i+1})`,
  :math:`a = (t - g_i) / (g_{i+1} - g_i)`, itself a distribution.
* The arrival :math:`A_k` of an intermediate leg is put on the lattice: the mass of
  each bin :math:`(s_j + (l - 1) h, s_j + l h]` is a difference of the predictive's
  cdf (exact given the lattice of :math:`S_k`), placed at the bin's midpoint (the
  midpoint rule: the later legs' cdfs, smooth at the scale of :math:`h`, are then
  integrated with an error of order :math:`h^2 f'`). For each grid departure this is
  one short convolution of the lattice weights with the cdf differences.
* A dwell is added by a convolution: a fixed dwell shifts the lattice exactly; a
  log-normal's bin masses sit at bin midpoints; an empirical sample's dwells are each
  split between the two lattice nodes around it in proportion (the mean is kept).
* A departure lattice wider than 480 nodes (two hours at 15 s, after long dwells or
  many legs) is coarsened, c neighbours merged at their centre onto a step of c h, and
  the departure grid is then at least that step: the number of model queries and of
  terms stays bounded, with the error of the midpoint rule at that step.
* The last leg is not discretised: :math:`P(\text{total} \le t) = \sum_j w_j
  F_K(t - s_j \mid \cdot)`, evaluated exactly at any :math:`t`. Quantiles: the same
  sum on the lattice's bin edges (one convolution per grid departure, exact there)
  gives each level's bin, inside which a safeguarded Newton iteration (``rtsafe``,
  Press et al. 2007, section 9.4) finishes. With two stops this is the model's own
  predictive.
* Tails: a leg's arrival lattice stops at its :math:`1 - 10^{-9}` quantile (at most
  :data:`MAX_LEG_HOURS` after the leg leaves) and lattice ends lighter than
  :math:`10^{-10}` are dropped. The mass beyond is kept as
  :attr:`StopsTrip.unresolved_probability`: this truncation understates the total's
  cdf by at most that, never overstates it, and quantiles above :math:`1 -` it are
  infinite.

Against Monte Carlo from the legs (leg 1 sampled at :math:`t_0`, leg 2 predicted and
sampled at each sampled arrival plus dwell, and so on) the Kolmogorov-Smirnov distance
stays within the sampling noise of 20,000 draws (measured 0.004-0.006, against 0.0096
for the 5 % level of the noise alone; ``tests/services/test_stops.py``), and
predicting every leg at :math:`t_0` instead is off by 0.15 on the tiny demo model
leaving before its morning peak.

References
----------
Westgate, Woodard, Matteson & Henderson (2013), "Travel time estimation for ambulances
using Bayesian data augmentation", Annals of Applied Statistics 7(2), 1139-1161
(ambulance travel-time distributions).
Hall (1986), "The fastest path through a network with random time-dependent travel
times", Transportation Science 20(3), 182-188 (a leg's law depends on when it leaves).
Press, Teukolsky, Vetterling & Flannery (2007), "Numerical Recipes", 3rd ed.,
section 9.4 (``rtsafe``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import special

from vrvm.services.answers.matrix import points_table, read_table
from vrvm.services.answers.schedule import local_time
from vrvm.trips.model.travel_time import TravelTimeModel

if TYPE_CHECKING:
    from vrvm.engine.mixture import MixtureDistribution
    from vrvm.trips.places.zone_files import ZoneFile

__all__ = [
    "DWELL_COLUMNS",
    "MAX_DWELL_MIN",
    "MAX_LEG_HOURS",
    "MAX_STOPS",
    "NO_DWELL",
    "QUANTILE_LEVELS",
    "Dwell",
    "Stop",
    "StopsTrip",
    "read_stops",
    "stops_table",
    "trip_with_stops",
]

MAX_STOPS = 10
"""Most stops of one trip (nine legs)."""
MAX_DWELL_MIN = 720.0
"""Longest dwell accepted, in minutes (12 h): anything longer is not one trip."""
MAX_LEG_HOURS = 12.0
"""A leg's arrival is resolved this long after it leaves at most; beyond is unresolved."""
QUANTILE_LEVELS = tuple(round(0.01 * i, 2) for i in range(1, 100))
"""The levels 0.01, 0.02, ..., 0.99 of the quantile tables."""
DWELL_COLUMNS = ("dwell_min", "dwell_median_min", "dwell_p90_min")
"""Dwell columns of a stops file: minutes, or a log-normal's median and 90th percentile."""

_Z90 = float(special.ndtri(0.9))  # standard normal 90th percentile, 1.2816
_LOW_TAIL = 1e-12  # a leg's lattice starts at its quantile of this level
_HIGH_TAIL = 1e-9  # ... and ends at the quantile of 1 minus this level
_TRIM = 1e-10  # lattice ends lighter than this are dropped (see the module notes)
_MAX_NODES = 480  # most nodes of a departure lattice (2 h at 15 s); wider ones coarsen
_CHUNK = 1 << 20  # elements of the (rows, terms, members) temporaries evaluated at once
_NEWTON_ITERATIONS = 100
_MAX_EMPIRICAL = 100_000


# ------------------------------------------------------------------------------ dwells
def _dwell_minutes(value, what: str) -> float:
    try:
        minutes = float(value)
    except (TypeError, ValueError):
        minutes = math.nan
    if not 0.0 <= minutes <= MAX_DWELL_MIN:
        raise ValueError(
            f"{what} must be minutes between 0 and {MAX_DWELL_MIN:g} (12 h), got {value!r}"
        )
    return minutes


def _number(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.0f}"


@dataclass(frozen=True)
class Dwell:
    """The time spent at a stop before the next leg leaves (minutes in, seconds out).

    Build one with :meth:`fixed`, :meth:`lognormal` or :meth:`empirical`.

    * ``fixed(m)``: exactly ``m`` minutes (0: no stop at all).
    * ``lognormal(median, p90)``: a log-normal with that median and 90th percentile, the
      two numbers a planner knows ("usually 10 minutes, 9 calls in 10 within 18"):
      :math:`\\log D \\sim N(\\mu, \\sigma^2)` with :math:`\\mu = \\log m` and
      :math:`\\sigma = \\log(p_{90} / m) / z_{0.9}`, :math:`z_{0.9} = 1.2816`.
      Dwells are right-skewed, like the on-scene times of ambulance calls.
    * ``empirical(sample)``: the dwells observed (minutes), each equally likely.

    Attributes
    ----------
    kind : {"fixed", "lognormal", "empirical"}
    minutes : tuple of float
        ``(m,)``, ``(median, p90)`` or the sample.

    Examples
    --------
    >>> Dwell.lognormal(10, 18).describe()
    'log-normal, median 10 min, 90 % within 18 min'
    >>> round(Dwell.lognormal(10, 18).quantile_s(0.9) / 60, 6)
    18.0
    >>> Dwell.empirical([5, 10, 15]).mean_s, Dwell.fixed(2.5).median_s
    (600.0, 150.0)
    """

    kind: str
    minutes: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "lognormal", "empirical"):
            raise ValueError(f"a dwell is fixed, lognormal or empirical, not {self.kind!r}")

    # -------------------------------------------------------------- constructors
    @classmethod
    def fixed(cls, minutes: float) -> Dwell:
        """Exactly ``minutes`` (>= 0, finite, at most :data:`MAX_DWELL_MIN`)."""
        return cls("fixed", (_dwell_minutes(minutes, "a dwell"),))

    @classmethod
    def lognormal(cls, median_min: float, p90_min: float) -> Dwell:
        """A log-normal dwell with this median and 90th percentile (minutes).

        ``p90_min`` must be at least ``median_min`` (> 0); equal, it is a fixed dwell.
        """
        median = _dwell_minutes(median_min, "a dwell's median")
        p90 = _dwell_minutes(p90_min, "a dwell's 90th percentile")
        if median <= 0:
            raise ValueError(
                f"a dwell's median must be > 0 minutes, got {median_min!r} (no dwell: 0 minutes)"
            )
        if p90 < median:
            raise ValueError(
                f"a dwell's 90th percentile ({p90_min!r} min) must be at least its median "
                f"({median_min!r} min)"
            )
        if p90 == median:
            return cls.fixed(median)
        return cls("lognormal", (median, p90))

    @classmethod
    def empirical(cls, minutes: Sequence[float]) -> Dwell:
        """The observed dwells ``minutes`` (at least one, each >= 0), equally likely."""
        values = np.asarray(minutes, dtype=np.float64).ravel() if len(minutes) else np.empty(0)
        if values.size == 0:
            raise ValueError("an empirical dwell needs at least one observed dwell (minutes)")
        if values.size > _MAX_EMPIRICAL:
            raise ValueError(
                f"an empirical dwell takes at most {_MAX_EMPIRICAL:,} dwells, got {values.size:,}"
            )
        bad = np.flatnonzero(~((values >= 0) & (values <= MAX_DWELL_MIN)))
        if bad.size:
            shown = ", ".join(f"#{i + 1} ({float(values[i])!r})" for i in bad[:5])
            raise ValueError(
                f"observed dwells {shown}: expected minutes between 0 and {MAX_DWELL_MIN:g}"
            )
        if np.all(values == values[0]):
            return cls.fixed(float(values[0]))
        return cls("empirical", tuple(float(v) for v in values))

    # ------------------------------------------------------------------- summaries
    @property
    def is_zero(self) -> bool:
        """True for no dwell (a fixed 0 minutes)."""
        return self.kind == "fixed" and self.minutes[0] == 0.0

    @property
    def _sigma(self) -> float:
        median, p90 = self.minutes
        return math.log(p90 / median) / _Z90

    @property
    def mean_s(self) -> float:
        """Mean dwell in seconds."""
        if self.kind == "fixed":
            return 60.0 * self.minutes[0]
        if self.kind == "lognormal":
            return 60.0 * self.minutes[0] * math.exp(0.5 * self._sigma**2)
        return 60.0 * float(np.mean(self.minutes))

    @property
    def median_s(self) -> float:
        """Median dwell in seconds."""
        return float(self.quantile_s(0.5))

    def quantile_s(self, q):
        """Quantile(s) at level(s) ``q`` in (0, 1), seconds (the empirical: the inverse
        of its step cdf, the smallest observed dwell with cdf >= q)."""
        q = np.asarray(q, dtype=np.float64)
        if self.kind == "fixed":
            out = np.full(q.shape, 60.0 * self.minutes[0])
        elif self.kind == "lognormal":
            out = 60.0 * self.minutes[0] * np.exp(self._sigma * special.ndtri(q))
        else:
            values = np.sort(np.asarray(self.minutes))
            rank = np.ceil(q * values.size - 1e-12).astype(np.int64) - 1
            out = 60.0 * values[np.clip(rank, 0, values.size - 1)]
        return float(out) if out.ndim == 0 else out

    def sample_s(self, size: int, random_state=None) -> np.ndarray:
        """``size`` independent dwells in seconds."""
        rng = np.random.default_rng(random_state)
        if self.kind == "fixed":
            return np.full(size, 60.0 * self.minutes[0])
        if self.kind == "lognormal":
            return 60.0 * self.minutes[0] * np.exp(self._sigma * rng.standard_normal(size))
        return 60.0 * rng.choice(np.asarray(self.minutes), size=size)

    def describe(self) -> str:
        """The dwell in words."""
        if self.kind == "fixed":
            return f"{_number(self.minutes[0])} min"
        if self.kind == "lognormal":
            median, p90 = self.minutes
            return f"log-normal, median {_number(median)} min, 90 % within {_number(p90)} min"
        return (
            f"empirical, {len(self.minutes):,} dwells, median "
            f"{_number(round(self.median_s / 60.0, 2))} min"
        )

    def to_dict(self) -> dict[str, Any]:
        """The dwell as JSON: ``{"kind": ..., "minutes": [...]}``."""
        return {"kind": self.kind, "minutes": list(self.minutes)}

    def lattice(self, step_s: float) -> tuple[float, np.ndarray, float]:
        """The dwell on a lattice of step ``step_s``: ``(offset_s, pmf, unresolved)``.

        Node ``i`` is at ``offset_s + i * step_s``. Fixed: one node at the dwell.
        Log-normal: the mass of each bin ``[i h, (i + 1) h)`` at its midpoint, up to the
        quantile ``1 - 1e-9``; the mass beyond is ``unresolved``. Empirical: each dwell
        split between the nodes around it in proportion (the mean is kept exactly).
        """
        if self.kind == "fixed":
            return 60.0 * self.minutes[0], np.ones(1), 0.0
        h = float(step_s)
        if self.kind == "lognormal":
            top = min(float(self.quantile_s(1.0 - _HIGH_TAIL)), 60.0 * MAX_DWELL_MIN)
            edges = h * np.arange(math.ceil(top / h) + 1)
            with np.errstate(divide="ignore"):
                z = (np.log(edges / 60.0) - math.log(self.minutes[0])) / self._sigma
            cdf = special.ndtr(z)
            return 0.5 * h, np.diff(cdf), float(special.ndtr(-z[-1]))
        position = 60.0 * np.asarray(self.minutes) / h
        node = np.floor(position).astype(np.int64)
        upper = position - node
        weight = 1.0 / position.size
        pmf = np.bincount(node, weights=(1.0 - upper) * weight, minlength=node.max() + 2)
        pmf += np.bincount(node + 1, weights=upper * weight, minlength=node.max() + 2)
        return 0.0, pmf, 0.0


NO_DWELL = Dwell.fixed(0.0)
"""No time at a stop: the next leg leaves on arrival."""


# ------------------------------------------------------------------------------- stops
@dataclass(frozen=True)
class Stop:
    """A stop of a trip: a point (degrees), its name, and the dwell there.

    The dwell is the time spent at the stop before the next leg leaves; the first and
    the last stop have none (delay the departure instead of a dwell at the first).
    """

    lat: float
    lon: float
    name: str
    dwell: Dwell = field(default=NO_DWELL)

    def __post_init__(self) -> None:
        lat, lon = float(self.lat), float(self.lon)
        if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
            raise ValueError(
                f"stop {self.name!r}: ({self.lat!r}, {self.lon!r}) are not coordinates: "
                "expected a latitude in [-90, 90] and a longitude in [-180, 180] degrees"
            )
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a stop needs a name, got {self.name!r}")
        if not isinstance(self.dwell, Dwell):
            raise ValueError(
                f"stop {self.name!r}: the dwell must be a Dwell (Dwell.fixed(minutes), "
                f"Dwell.lognormal(median, p90), Dwell.empirical(minutes)), got {self.dwell!r}"
            )
        object.__setattr__(self, "lat", lat)
        object.__setattr__(self, "lon", lon)


def _check_stops(stops: Sequence[Stop]) -> tuple[Stop, ...]:
    stops = tuple(stops)
    if len(stops) < 2:
        raise ValueError(f"a trip with stops needs at least two stops, got {len(stops)}")
    if len(stops) > MAX_STOPS:
        raise ValueError(f"a trip takes at most {MAX_STOPS} stops, got {len(stops)}")
    for i, stop in enumerate(stops):
        if not isinstance(stop, Stop):
            raise ValueError(f"stop {i + 1} must be a Stop, got {type(stop).__name__}")
    for i, end in ((0, "starts"), (len(stops) - 1, "ends")):
        if not stops[i].dwell.is_zero:
            advice = "delay the departure instead" if i == 0 else "it is not part of the trip"
            raise ValueError(
                f"stop {i + 1} ({stops[i].name}) has a dwell ({stops[i].dwell.describe()}) but "
                f"the trip {end} there: {advice}"
            )
    for i in range(1, len(stops)):
        a, b = stops[i - 1], stops[i]
        if round(a.lat, 6) == round(b.lat, 6) and round(a.lon, 6) == round(b.lon, 6):
            raise ValueError(
                f"stops {i} and {i + 1} ({a.name}, {b.name}) are the same point: a leg goes "
                "somewhere; give the place once, with its dwell"
            )
    return stops


def stops_table(
    frame: pd.DataFrame, *, source: str = "stops", zones: ZoneFile | None = None
) -> list[Stop]:
    """Stops from a table, in its row order.

    Parameters
    ----------
    frame : pandas.DataFrame
        The points as :func:`~vrvm.services.answers.matrix.points_table` reads them
        (``lat``, ``lon`` and an optional ``name``, or a ``zone`` column), and optional
        dwell columns (:data:`DWELL_COLUMNS`, compared stripped and case-insensitive):
        ``dwell_min`` (minutes), or ``dwell_median_min`` with ``dwell_p90_min`` (a
        log-normal). An empty cell is no dwell; the first and last rows have none.
    source : str, default="stops"
        The file's name, for the messages.
    zones : ZoneFile, optional
        The zone file whose polygons a ``zone`` column names (else H3 cells).

    Returns
    -------
    list of Stop
        Named by the ``name`` (or zone id) column, else ``stop <row>``.

    Raises
    ------
    ValueError
        Naming the file, the column and the row (the line in the file, header = 1).

    Examples
    --------
    >>> table = pd.DataFrame({"name": ["base", "scene", "hospital"],
    ...                       "lat": [41.79, 41.88, 41.87], "lon": [-87.60, -87.63, -87.67],
    ...                       "dwell_min": ["", "10", ""]})
    >>> [(s.name, s.dwell.describe()) for s in stops_table(table)]
    [('base', '0 min'), ('scene', '10 min'), ('hospital', '0 min')]
    """
    points = points_table(frame, source=source, zones=zones)
    named = points["label"].dtype.kind != "i"
    columns = {str(c).strip().lower(): c for c in frame.columns}
    fixed, median, p90 = (columns.get(name) for name in DWELL_COLUMNS)
    if (median is None) != (p90 is None):
        given, missing = ("dwell_median_min", "dwell_p90_min")[:: 1 if median else -1]
        raise ValueError(
            f"{source}: column {given!r} needs column {missing!r} (a log-normal dwell by its "
            "median and 90th percentile, minutes)"
        )
    stops = []
    for row in range(len(frame)):
        line = row + 2
        cells = {
            name: _cell(frame, column, row)
            for name, column in zip(DWELL_COLUMNS, (fixed, median, p90), strict=True)
        }
        try:
            dwell = _row_dwell(cells)
        except ValueError as exc:
            column = next((c for c in DWELL_COLUMNS if cells[c] is not None), DWELL_COLUMNS[0])
            raise ValueError(f"{source}: column {column!r}: row {line}: {exc}") from None
        label = points["label"].iloc[row]
        name = str(label) if named else f"stop {line}"
        if row in (0, len(frame) - 1) and not dwell.is_zero:
            end = "first" if row == 0 else "last"
            raise ValueError(
                f"{source}: row {line} ({name}): the {end} stop has a dwell "
                f"({dwell.describe()}): only stops between the first and the last have one"
            )
        stops.append(
            Stop(float(points["lat"].iloc[row]), float(points["lon"].iloc[row]), name, dwell)
        )
    return stops


def _cell(frame: pd.DataFrame, column, row: int) -> str | None:
    if column is None:
        return None
    value = frame[column].iloc[row]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _row_dwell(cells: dict[str, str | None]) -> Dwell:
    fixed, median, p90 = (cells[c] for c in DWELL_COLUMNS)
    if fixed is not None and (median is not None or p90 is not None):
        raise ValueError(
            "give a dwell either as dwell_min or as dwell_median_min with dwell_p90_min, not both"
        )
    if fixed is not None:
        return Dwell.fixed(_as_float(fixed))
    if median is None and p90 is None:
        return NO_DWELL
    if median is None or p90 is None:
        raise ValueError("a log-normal dwell needs both dwell_median_min and dwell_p90_min")
    return Dwell.lognormal(_as_float(median), _as_float(p90))


def _as_float(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text  # the Dwell constructor names it as written


def read_stops(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    *,
    zones: ZoneFile | None = None,
    source: str | None = None,
) -> list[Stop]:
    """Read ordered stops from a CSV or Parquet file (see :func:`stops_table`), as
    :func:`~vrvm.services.answers.matrix.read_table` reads a file of places."""
    frame, name = read_table(
        path_or_buffer, source=source, expected="lat, lon, an optional name and dwell_min"
    )
    return stops_table(frame, source=name, zones=zones)


# ---------------------------------------------------------- sums of shifted predictives
def _rows_per_chunk(n_terms: int, n_components: int) -> int:
    return max(1, _CHUNK // max(1, n_terms * n_components))


class _Shifted:
    """sum_i w_i F_{r_i}(t - s_i): a weighted sum of shifted predictives.

    ``dist`` is a batch of predictives (one per grid departure), term ``i`` uses
    ``dist[r_i]`` shifted by ``s_i`` seconds with weight ``w_i``; the weights sum to
    ``mass`` <= 1 (the rest is unresolved: beyond every finite time). The shifts lie on
    the lattice ``offset + j h``; ``label`` names the leg in messages.
    """

    def __init__(
        self, dist: MixtureDistribution, r, shift, weight, *, offset: float, h: float, label: str
    ):
        keep = weight > 0
        self.dist = dist
        self.r = r[keep]
        self.shift = shift[keep]
        self.weight = weight[keep]
        self.offset = offset
        self.h = h
        self.label = label
        self.mass = float(self.weight.sum())
        self._terms = dist[self.r]
        self._rows = _rows_per_chunk(self.r.size, dist.n_components)
        self._lattice: tuple[float, np.ndarray, float] | None = None
        self._collapsed: _Shifted | None = None

    def collapsed(self) -> _Shifted:
        """The same terms without their shifts, merged per predictive (a leg's own time)."""
        if self._collapsed is None:
            weight = np.bincount(self.r, weights=self.weight, minlength=len(self.dist))
            r = np.arange(len(self.dist))
            self._collapsed = _Shifted(
                self.dist, r, np.zeros(r.size), weight, offset=0.0, h=self.h, label=self.label
            )
        return self._collapsed

    # ------------------------------------------------------------- exact values
    def _evaluate(self, method: str, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        flat = t.ravel()
        out = np.empty(flat.size)
        for start in range(0, flat.size, self._rows):
            part = flat[start : start + self._rows]
            values = getattr(self._terms, method)(part[:, None] - self.shift[None, :])
            out[start : start + part.size] = values @ self.weight
        return out.reshape(t.shape)

    def cdf(self, t) -> np.ndarray:
        return self._evaluate("cdf", t)

    def pdf(self, t) -> np.ndarray:
        return self._evaluate("pdf", t)

    def mean(self) -> float:
        """The mean over the resolved mass: sum w_i (s_i + mean_r_i) / mass."""
        means = self.dist.mean()[self.r]
        return float(self.weight @ (self.shift + means) / self.mass)

    # ------------------------------------------------------------------ lattice
    def lattice(self) -> tuple[float, np.ndarray, float]:
        """The law on bins of width h: ``(top, pmf, unresolved)``.

        ``pmf[i]`` is the mass of the bin ``(top + (i - 1) h, top + i h]`` (the first
        bin also holds the mass below it, under 1e-12), so ``cumsum(pmf)`` is the exact
        cdf at the bins' upper edges; ``unresolved`` is the mass above the last. For
        each grid departure r this is one convolution of the lattice weights of its
        terms with the differences of F_r on the lags ``l h``, from its quantile at
        1e-12 to that at 1 - 1e-9 (at most :data:`MAX_LEG_HOURS`).
        """
        if self._lattice is not None:
            return self._lattice
        dist, h = self.dist, self.h
        low = float(np.min(dist.ppf(_LOW_TAIL)))
        high = float(np.max(dist.ppf(1.0 - _HIGH_TAIL)))
        if not (math.isfinite(low) and high > low):
            raise ValueError(f"{self.label}: the model cannot answer: a degenerate predictive")
        first = math.floor(low / h)
        last = math.ceil(min(high, low + MAX_LEG_HOURS * 3600.0) / h)
        lags = h * np.arange(first, last + 1, dtype=np.float64)
        table = np.empty((lags.size, len(dist)))
        rows = _rows_per_chunk(len(dist), dist.n_components)
        for start in range(0, lags.size, rows):
            table[start : start + rows] = dist.cdf(lags[start : start + rows, None])
        masses = np.diff(table, axis=0, prepend=0.0)  # lag l: (s + (l - 1) h, s + l h]
        beyond = dist.sf(lags[-1])
        node = np.rint((self.shift - self.offset) / h).astype(np.int64)
        pmf = np.zeros(int(node.max()) + lags.size)
        order = np.argsort(self.r, kind="stable")
        bounds = np.flatnonzero(np.diff(self.r[order])) + 1
        for group in np.split(order, bounds):
            lo_node = node[group].min()
            weights = np.bincount(node[group] - lo_node, weights=self.weight[group])
            part = np.convolve(weights, masses[:, self.r[group[0]]])
            pmf[lo_node : lo_node + part.size] += part
        unresolved = float(self.weight @ beyond[self.r])
        self._lattice = (self.offset + first * h, np.clip(pmf, 0.0, None), unresolved)
        return self._lattice

    # ---------------------------------------------------------------- quantiles
    def ppf(self, q) -> np.ndarray:
        """Quantiles: inf at levels the resolved mass does not reach."""
        q = np.asarray(q, dtype=np.float64)
        flat = q.ravel()
        out = np.full(flat.size, np.inf)
        inner = flat < self.mass * (1.0 - 1e-12)
        if inner.any():
            out[inner] = self._solve(flat[inner])
        return out.reshape(q.shape)

    def _brackets(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Brackets from the terms' own quantiles: at the smallest term quantile at q the
        sum is <= mass q <= q, at the largest at q / mass it is >= q."""
        top = np.minimum(q / self.mass, 1.0 - 1e-15)
        used = np.unique(self.r)
        quantiles = self.dist[used].ppf(np.concatenate([q, top])[:, None])  # (2 n, used)
        position = np.searchsorted(used, self.r)
        low_shift = np.full(used.size, np.inf)
        high_shift = np.full(used.size, -np.inf)
        np.minimum.at(low_shift, position, self.shift)
        np.maximum.at(high_shift, position, self.shift)
        lo = (quantiles[: q.size] + low_shift).min(axis=1)
        hi = (quantiles[q.size :] + high_shift).max(axis=1)
        return lo, hi

    def _solve(self, q: np.ndarray) -> np.ndarray:
        """Safeguarded Newton (``rtsafe``) from the lattice's bin holding each level."""
        top, pmf, _ = self.lattice()
        edges_cdf = np.cumsum(pmf)
        i = np.searchsorted(edges_cdf, q, side="left")  # first upper edge with cdf >= q
        binned = (i > 0) & (i < edges_cdf.size)
        lo = np.empty(q.size)
        hi = np.empty(q.size)
        x = np.empty(q.size)
        j = i[binned]
        below, above = edges_cdf[j - 1], edges_cdf[j]
        share = (q[binned] - below) / np.where(above > below, above - below, 1.0)
        x[binned] = top + (j - 1 + np.clip(share, 0.0, 1.0)) * self.h
        # the bin's edges widened by a step: the sums' rounding must not exclude a root
        # that falls on an edge
        lo[binned] = top + (j - 2) * self.h
        hi[binned] = top + (j + 1) * self.h
        if not binned.all():
            lo[~binned], hi[~binned] = self._brackets(q[~binned])
            x[~binned] = 0.5 * (lo[~binned] + hi[~binned])
        active = np.flatnonzero(hi > lo)
        for _ in range(_NEWTON_ITERATIONS):
            if active.size == 0:
                break
            xa = x[active]
            excess = self.cdf(xa) - q[active]
            slope = self.pdf(xa)
            low = excess < 0
            lo[active] = np.where(low, xa, lo[active])
            hi[active] = np.where(low, hi[active], xa)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = xa - excess / slope
            inside = (slope > 0) & (newton >= lo[active]) & (newton <= hi[active])
            new = np.where(inside, newton, 0.5 * (lo[active] + hi[active]))
            solved = np.abs(excess) <= 1e-15  # x is the root to rounding
            new = np.where(solved, xa, new)
            x[active] = new
            tolerance = 1e-9 * np.abs(new) + 1e-9
            done = solved | (np.abs(new - xa) <= tolerance) | (hi[active] - lo[active] <= tolerance)
            active = active[~done]
        return x


# ------------------------------------------------------------------------------ result
@dataclass(frozen=True)
class _Leg:
    origin: Stop
    destination: Stop
    arrival: _Shifted  # elapsed seconds from the trip's departure to the arrival
    departure_quantiles: Callable[[np.ndarray], np.ndarray]  # levels -> elapsed seconds


class StopsTrip:
    """The total time of a trip through ordered stops, and each leg's.

    Times are seconds from the departure at the first stop (dwells included); clock
    times are aware timestamps in the departure's time zone. Built by
    :func:`trip_with_stops`.

    Attributes
    ----------
    departure : pandas.Timestamp
        When the trip leaves the first stop (aware).
    stops : tuple of Stop
        The stops in order.
    unresolved_probability : float
        Probability beyond the resolved range (see the module's notes): the cdf is
        understated by at most this much, and quantiles above ``1 -`` it are infinite.
    """

    def __init__(
        self,
        departure: pd.Timestamp,
        stops: tuple[Stop, ...],
        legs: list[_Leg],
        dwell_mean_s: float,
    ):
        self.departure = departure
        self.stops = stops
        self._legs = legs
        self._total = legs[-1].arrival
        self._dwell_mean_s = dwell_mean_s
        self.unresolved_probability = max(0.0, 1.0 - self._total.mass)

    def __repr__(self) -> str:
        names = " -> ".join(s.name for s in self.stops)
        return f"StopsTrip({names}, departure={self.departure.isoformat()})"

    @property
    def n_legs(self) -> int:
        """Number of legs (stops minus one)."""
        return len(self._legs)

    # ----------------------------------------------------------- the total's law
    def cdf(self, t_s) -> np.ndarray:
        """P(total <= t) for times ``t_s`` in seconds (any shape)."""
        return self._total.cdf(_finite_times(t_s))

    def prob_within(self, t_s) -> np.ndarray:
        """P(total within ``t_s`` seconds): the same as :meth:`cdf`."""
        return self.cdf(t_s)

    def pdf(self, t_s) -> np.ndarray:
        """The total's density (per second) at ``t_s``."""
        return self._total.pdf(_finite_times(t_s))

    def ppf(self, q) -> np.ndarray:
        """Quantiles of the total (seconds) at levels ``q`` strictly between 0 and 1."""
        return self._total.ppf(_levels(q))

    def median(self) -> float:
        """Median total time in seconds."""
        return float(self.ppf(0.5))

    def interval(self, level: float = 0.9) -> tuple[float, float]:
        """Central interval of the total holding probability ``level`` (seconds)."""
        lo, hi = self.ppf(_interval_levels(level))
        return float(lo), float(hi)

    def mean(self) -> float:
        """Mean total in seconds: the legs' means plus the dwells' means."""
        legs = sum(leg.arrival.collapsed().mean() for leg in self._legs)
        return float(legs + self._dwell_mean_s)

    def arrival(self, q) -> pd.DatetimeIndex | pd.Timestamp:
        """Clock time(s) of arrival at the last stop at levels ``q`` (to the second)."""
        return self._clock(self.ppf(q))

    def _clock(self, elapsed_s):
        """Clock times (to the second) ``elapsed_s`` after the departure; NaT for inf."""
        elapsed = np.asarray(elapsed_s, dtype=np.float64)
        nanos = np.where(np.isfinite(elapsed), np.round(elapsed * 1e9), np.nan)
        times = (self.departure + pd.to_timedelta(nanos.ravel(), unit="ns")).round("s")
        return times[0] if elapsed.ndim == 0 else times

    # ---------------------------------------------------------------------- legs
    def legs(self, level: float = 0.9) -> pd.DataFrame:
        """One row per leg: where from and to, when it leaves, how long it takes, when
        it arrives.

        Columns ``leg`` (1, 2, ...), ``from``, ``to``, ``depart``, ``depart_lo``,
        ``depart_hi`` (clock times: the median and the central ``level`` interval of
        when the leg leaves; the first leg leaves at :attr:`departure`), ``median_s``,
        ``lo_s``, ``hi_s`` (the leg's own travel time), ``arrive``, ``arrive_lo``,
        ``arrive_hi`` (clock times at ``to``), ``dwell`` (the dwell at ``to``, in
        words) and ``dwell_median_s``.

        The departure of a leg after a random dwell is read from the lattice (within
        half a lattice step); every other column is exact given the lattice.
        """
        levels = np.array([0.5, *_interval_levels(level)])
        rows = []
        for k, leg in enumerate(self._legs, start=1):
            depart = self._clock(leg.departure_quantiles(levels))
            own = leg.arrival.collapsed().ppf(levels)
            arrive = self._clock(leg.arrival.ppf(levels))
            rows.append(
                {
                    "leg": k,
                    "from": leg.origin.name,
                    "to": leg.destination.name,
                    "depart": depart[0],
                    "depart_lo": depart[1],
                    "depart_hi": depart[2],
                    "median_s": own[0],
                    "lo_s": own[1],
                    "hi_s": own[2],
                    "arrive": arrive[0],
                    "arrive_lo": arrive[1],
                    "arrive_hi": arrive[2],
                    "dwell": leg.destination.dwell.describe(),
                    "dwell_median_s": leg.destination.dwell.median_s,
                }
            )
        return pd.DataFrame(rows)

    def quantiles(self, levels: Sequence[float] = QUANTILE_LEVELS) -> pd.DataFrame:
        """Quantile table, long: the total, then each leg, at every level.

        Columns ``part`` (``"total"`` or ``"leg"``), ``leg`` (0 for the total),
        ``from``, ``to``, ``level``, ``time_s`` (the total's, or the leg's own travel
        time's quantile) and ``arrive`` (the clock time of arrival at ``to`` at that
        level; for the total, at the last stop).
        """
        levels = _levels(np.asarray(levels, dtype=np.float64)).ravel()
        parts = []
        first, last = self.stops[0].name, self.stops[-1].name
        total = self.ppf(levels)
        parts.append(self._part("total", 0, first, last, levels, total, total))
        for k, leg in enumerate(self._legs, start=1):
            own = leg.arrival.collapsed().ppf(levels)
            arrive = leg.arrival.ppf(levels)
            parts.append(
                self._part("leg", k, leg.origin.name, leg.destination.name, levels, own, arrive)
            )
        return pd.concat(parts, ignore_index=True)

    def _part(self, part, k, origin, destination, levels, time_s, arrive_s) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "part": part,
                "leg": k,
                "from": origin,
                "to": destination,
                "level": levels,
                "time_s": time_s,
                "arrive": self._clock(arrive_s),
            }
        )

    def sentence(self, within_s: float | None = None, level: float = 0.9) -> str:
        """The answer in one sentence (minutes, clock times)."""
        lo, hi = self.interval(level)
        names = " -> ".join(s.name for s in self.stops)
        text = (
            f"{names} leaving {self.departure:%H:%M}: {self.median() / 60:.1f} min in total "
            f"(median; {round(100 * level):g} % between {lo / 60:.1f} and {hi / 60:.1f} min), "
            f"arriving about {self.arrival(0.5):%H:%M}"
        )
        if within_s is not None:
            p = float(self.prob_within(within_s))
            text += f"; P(within {_number(within_s / 60)} min) = {100 * p:.1f} %"
        return text + "."

    def to_dict(
        self,
        within_s: float | None = None,
        level: float = 0.9,
        levels: Sequence[float] = QUANTILE_LEVELS,
    ) -> dict[str, Any]:
        """The answer as JSON: departure, stops, the total, the legs and the quantiles."""
        lo, hi = self.interval(level)
        total = {
            "median_s": self.median(),
            "lo_s": lo,
            "hi_s": hi,
            "level": level,
            "mean_s": self.mean(),
            "arrive": self.arrival(0.5).isoformat(),
            "unresolved_probability": self.unresolved_probability,
        }
        if within_s is not None:
            total["within_s"] = float(within_s)
            total["p_within"] = float(self.prob_within(within_s))
        legs = self.legs(level)
        quantiles = self.quantiles(levels)
        return {
            "departure": self.departure.isoformat(),
            "time_zone": str(self.departure.tz),
            "stops": [
                {"name": s.name, "lat": s.lat, "lon": s.lon, "dwell": s.dwell.to_dict()}
                for s in self.stops
            ],
            "total": total,
            "legs": _records(legs),
            "quantiles": _records(quantiles),
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {key: _json_value(value) for key, value in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def _json_value(value):
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        return float(value) if math.isfinite(value) else None
    return value


def _finite_times(t_s) -> np.ndarray:
    t = np.asarray(t_s, dtype=np.float64)
    if np.isnan(t).any():
        raise ValueError("times must be numbers of seconds, got NaN")
    return t


def _levels(q) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if not np.all((q > 0) & (q < 1)):
        raise ValueError(f"levels must lie strictly between 0 and 1, got {q.ravel()[:5]}")
    return q


def _interval_levels(level: float) -> np.ndarray:
    if not 0 < level < 1:
        raise ValueError(f"an interval's level must lie strictly between 0 and 1, got {level!r}")
    return np.array([(1 - level) / 2, (1 + level) / 2])


# ------------------------------------------------------------------------- the method
def _check_steps(step_s: float, departure_step_s: float) -> tuple[float, float]:
    step_s, departure_step_s = float(step_s), float(departure_step_s)
    if not 1.0 <= step_s <= 120.0:
        raise ValueError(f"step_s must be seconds between 1 and 120, got {step_s!r}")
    if not step_s <= departure_step_s <= 900.0:
        raise ValueError(
            f"departure_step_s must be seconds between step_s ({step_s:g}) and 900, "
            f"got {departure_step_s!r}"
        )
    return step_s, departure_step_s


def _departure(model: TravelTimeModel, departure) -> pd.Timestamp:
    return local_time(departure, model.tz_, "the departure")


def _predict_leg(
    model: TravelTimeModel,
    k: int,
    origin: Stop,
    destination: Stop,
    departure: pd.Timestamp,
    offsets_s: np.ndarray,
    weights: np.ndarray,
    h: float,
    departure_step_s: float,
) -> _Shifted:
    """Leg ``k`` leaving at ``departure + offsets_s`` with probabilities ``weights``.

    The model is asked at the grid departures around each offset (one call), and each
    offset's predictive is the linear interpolation between its two grid neighbours.
    """
    step_ns = round(departure_step_s * 1e9)
    grid0 = departure.value  # the grid starts at the trip's departure: leg 1 is exact
    position = offsets_s * (1e9 / step_ns)
    below = np.floor(position)
    share = position - below
    below = below.astype(np.int64)
    upper = share > 0
    needed = np.unique(np.concatenate([below, below[upper] + 1]))
    times = pd.DatetimeIndex(grid0 + needed * step_ns, tz="UTC").tz_convert(departure.tz)
    queries = pd.DataFrame(
        {
            "origin_lat": np.full(needed.size, origin.lat),
            "origin_lon": np.full(needed.size, origin.lon),
            "dest_lat": np.full(needed.size, destination.lat),
            "dest_lon": np.full(needed.size, destination.lon),
            "start_time": times,
        }
    )
    what = f"leg {k} ({origin.name} -> {destination.name})"
    try:
        dist = model.predict_dist(queries)
        probe = dist.cdf(np.array([[60.0], [3600.0]]))
    except ValueError as exc:
        raise ValueError(f"{what}: the model cannot answer: {exc}") from None
    if not np.all(np.isfinite(probe)):
        raise ValueError(f"{what}: the model cannot answer: its predictive is not finite")
    r = np.concatenate([np.searchsorted(needed, below), np.searchsorted(needed, below + 1)])
    shift = np.concatenate([offsets_s, offsets_s])
    weight = np.concatenate([weights * (1.0 - share), weights * share])
    return _Shifted(dist, r, shift, weight, offset=offsets_s[0], h=h, label=what)


def _trimmed(offset: float, pmf: np.ndarray, h: float) -> tuple[float, np.ndarray]:
    """Drop lattice ends lighter than :data:`_TRIM`: the lower end's mass joins the first
    node kept (later: conservative), the upper end's is dropped (unresolved)."""
    total = np.cumsum(pmf)
    first = int(np.searchsorted(total, _TRIM, side="right"))
    heavy = np.flatnonzero(total[-1] - total > _TRIM)
    last = max(int(heavy[-1]) + 1 if heavy.size else pmf.size - 1, first)
    kept = pmf[first : last + 1].copy()
    if first > 0:
        kept[0] += total[first - 1]
    return offset + first * h, kept


def _coarsened(offset: float, pmf: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
    """At most :data:`_MAX_NODES` nodes: groups of c neighbours merged at their centre,
    on a lattice of step c h (a leg's departures spread over hours need no 15 s step)."""
    if pmf.size <= _MAX_NODES:
        return offset, pmf, h
    c = math.ceil(pmf.size / _MAX_NODES)
    padded = np.zeros(math.ceil(pmf.size / c) * c)
    padded[: pmf.size] = pmf
    return offset + 0.5 * (c - 1) * h, padded.reshape(-1, c).sum(axis=1), c * h


def _lattice_quantiles(offset: float, pmf: np.ndarray, h: float, levels) -> np.ndarray:
    """Quantiles of a lattice law, each node's mass spread evenly over +- h / 2."""
    edges = np.concatenate([[0.0], np.cumsum(pmf)])
    positions = offset + h * (np.arange(edges.size) - 0.5)
    return np.interp(levels, edges, positions, right=np.inf)


def trip_with_stops(
    model: TravelTimeModel,
    stops: Sequence[Stop],
    departure,
    *,
    step_s: float = 15.0,
    departure_step_s: float = 60.0,
) -> StopsTrip:
    """The total time of a trip through ordered stops, each leg leaving on arrival.

    Parameters
    ----------
    model : TravelTimeModel
        The fitted model (anything with ``predict_dist`` and ``tz_``).
    stops : sequence of Stop
        Two to :data:`MAX_STOPS` stops in order; a dwell at each intermediate stop
        (:class:`Dwell`), none at the first or the last.
    departure : datetime-like
        When the trip leaves the first stop; a naive time is a wall-clock time in the
        model's time zone.
    step_s : float, default=15.0
        Lattice step of the arrival times (seconds, 1 to 120).
    departure_step_s : float, default=60.0
        Grid of departure times at which the model is asked (seconds, ``step_s`` to
        900; at least the lattice's step once it is coarsened); between them the
        predictive is interpolated linearly.

    Returns
    -------
    StopsTrip
        The total's cdf, quantiles, median, interval, mean and P(within T), with
        :meth:`~StopsTrip.legs` and :meth:`~StopsTrip.quantiles` tables.

    Raises
    ------
    ValueError
        Fewer than two or more than :data:`MAX_STOPS` stops, two consecutive stops at
        the same point, a dwell at the first or last stop, an invalid departure, or a
        leg the model cannot answer (named by its number and stops).

    Notes
    -----
    Legs are conditionally independent given their departure times, and dwells
    independent of travel (see the module's notes for the method and its accuracy).
    The model is asked once per leg, for every ``departure_step_s`` grid time the
    leg may leave at: a few dozen queries for legs of typical spread.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> stops = [Stop(-40.03, -30.05, "base"),
    ...          Stop(-39.98, -30.00, "scene", Dwell.fixed(10)),
    ...          Stop(-40.00, -29.95, "hospital")]
    >>> trip = trip_with_stops(model, stops, "2024-03-12 07:30")
    >>> list(trip.legs()["to"]), bool(trip.median() > 600)
    (['scene', 'hospital'], True)
    >>> lo, hi = trip.interval(0.9)
    >>> bool(lo < trip.median() < hi), bool(0 < trip.prob_within(hi) <= 1)
    (True, True)
    """
    stops = _check_stops(stops)
    h, departure_step_s = _check_steps(step_s, departure_step_s)
    start = _departure(model, departure)
    offset, pmf = 0.0, np.ones(1)  # S_1 = 0: the lattice of when the leg leaves
    legs: list[_Leg] = []
    dwell_mean_s = 0.0
    previous: tuple[_Shifted, float | None] | None = None  # arrival, a fixed dwell there
    for k in range(1, len(stops)):
        origin, destination = stops[k - 1], stops[k]
        offsets = offset + h * np.arange(pmf.size)
        arrival = _predict_leg(
            model, k, origin, destination, start, offsets, pmf, h, max(departure_step_s, h)
        )
        leaves = _departure_quantiles(previous, offset, pmf, h)
        legs.append(_Leg(origin, destination, arrival, leaves))
        if k == len(stops) - 1:
            break
        # the next leg leaves at A_k + D_k: A_k's bins at their midpoints, then the dwell
        top, pmf, _ = arrival.lattice()
        offset = top - 0.5 * h
        dwell = destination.dwell
        dwell_mean_s += dwell.mean_s
        dwell_offset, dwell_pmf, _ = dwell.lattice(h)
        pmf = np.convolve(pmf, dwell_pmf) if dwell_pmf.size > 1 else pmf * dwell_pmf[0]
        offset, pmf = _trimmed(offset + dwell_offset, pmf, h)
        offset, pmf, h = _coarsened(offset, pmf, h)
        previous = (arrival, dwell.mean_s if dwell.kind == "fixed" else None)
    return StopsTrip(start, stops, legs, dwell_mean_s)


def _departure_quantiles(
    previous: tuple[_Shifted, float | None] | None, offset: float, pmf: np.ndarray, h: float
) -> Callable[[np.ndarray], np.ndarray]:
    """When a leg leaves (elapsed seconds) at given levels: 0 for the first leg; the
    previous arrival's exact quantiles plus a fixed dwell; else read from the lattice."""

    def quantiles(levels: np.ndarray) -> np.ndarray:
        levels = np.asarray(levels, dtype=np.float64)
        if previous is None:
            return np.zeros(levels.shape)
        arrival, fixed_dwell_s = previous
        if fixed_dwell_s is not None:
            return arrival.ppf(levels) + fixed_dwell_s
        return _lattice_quantiles(offset, pmf, h, levels)

    return quantiles
