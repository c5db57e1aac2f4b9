"""Fleet coverage: several bases at once, and where one more base should go.

Emergency services dispatch from several bases. At one departure time and a threshold
T, :func:`fleet_coverage` gives every zone of the service area (hexagons or a planner's
polygons, each standing for its point) two probabilities:

* **P(best base within T)** (``p_best``): the chance that the base dispatch would send
  reaches the zone within T. That base (``best_base``) is the one with the highest
  P(T_b <= T) for the zone, each base's probability being the ensemble's predictive
  for the trip from it (the first base listed wins a tie).
* **P(any base within T)** (``p_any``): the chance that at least one base would reach
  the zone within T, were all of them to set off at once,

  .. math:: P_\\text{any}(z) = \\frac{1}{M} \\sum_m \\Big[1 - \\prod_b
            \\big(1 - F_{m,b,z}(T)\\big)\\Big],

  with F_{m,b,z} the cdf of ensemble member m for the trip from base b to zone z. The
  ensemble's predictive of one trip is the uniform mixture of its M members; here a
  member is drawn once for all bases (a shared scenario of the city's conditions),
  and the bases' travel times are independent given it. With one base this is that
  base's P(T <= T); with several it is at least P(best base within T). Two bases at
  one place count as two vehicles whose delays are independent given the scenario.

:func:`rank_new_base` ranks candidate zones by how much a base there would raise the
**demand-weighted coverage**, the mean of P(any base within T) over zones weighted by
demand (:func:`zone_demand`: training-trip origins per zone by default, or a planner's
column). Adding base c at zone c multiplies every member's miss probability
prod_b (1 - F_{m,b,z}) by (1 - F_{m,c,z}), so its gain is

.. math:: \\Delta_c = \\frac{\\sum_z w_z \\frac{1}{M} \\sum_m F_{m,c,z}(T)
          \\prod_b \\big(1 - F_{m,b,z}(T)\\big)}{\\sum_z w_z},

one contraction per block of candidates: the candidates x zones probabilities are
predicted block by block, never held all at once. Both coverages are monotone and
submodular in the set of bases (a covering function and a facility-location function),
so adding the top candidate again and again is the greedy heuristic of maximal
covering location, within 1 - 1/e of the best set of added bases (Nemhauser, Wolsey &
Fisher 1978). Bases are read from CSV by :mod:`vrvm.services.planning.fleet_files`, which also
writes the downloads.

A model with a PIT map (``model.spread_.pit_map``, issue 34) reads its mixture's
probabilities through G (:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.recalibrate`):
each base's P(T <= T) is G(F_{b,z}(T)), what the Predict page says for that trip, and
P(any base within T) is G of the probability above, so one base gives the same answer
either way. G corrects the model's probabilities, not its members one by one, so with
several bases this reads the members' joint answer through the map made for one trip;
candidate gains are computed from the mapped coverages, which keeps them exact
differences (G is not linear, so the greedy guarantee holds for the unmapped
coverage).

References
----------
Church & ReVelle (1974), "The maximal covering location problem", Papers of the
Regional Science Association 32, 101-118.
Daskin (1983), "A maximum expected covering location model: formulation, properties
and heuristic solution", Transportation Science 17(1), 48-70.
Nemhauser, Wolsey & Fisher (1978), "An analysis of approximations for maximizing
submodular set functions - I", Mathematical Programming 14, 265-294.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB, rgba
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place, locate, place_from_latlon, place_from_zone
from vrvm.services.planning.coverage import coverage_colors
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import haversine_km

__all__ = [
    "BASE_COLUMNS",
    "FLEET_METRICS",
    "MAX_BASES",
    "OBJECTIVES",
    "FleetCoverage",
    "base_markers",
    "bases_at_points",
    "bases_from_zones",
    "clean_name",
    "combine_bases",
    "default_bases",
    "demand_weighted",
    "fleet_coverage",
    "fleet_map",
    "locate_bases",
    "member_cdfs",
    "rank_new_base",
    "toggle_zone_base",
    "zone_demand",
]

MAX_BASES = 50
"""At most this many bases (a file with more is refused)."""
MAX_NAME_CHARS = 60
BASE_COLUMNS = ["name", "lat", "lon", "zone", "label", "kind"]
"""A bases table: name, the point (degrees), the zone holding it and that zone's label,
``kind`` ``"zone"`` (placed at a zone's point from the map or the list) or ``"point"``
(typed or uploaded coordinates)."""
FLEET_METRICS = {
    "best": "P(best base within T)",
    "any": "P(any base within T)",
}
"""What the map can be coloured by, and the label that names each everywhere."""
OBJECTIVES = ("any", "best")
"""What a new base is ranked by: the gain in demand-weighted P(any base within T)
(default) or in demand-weighted P(best base within T)."""
_BLOCK_PAIRS = 32_768  # (base or candidate, zone) pairs predicted at once: a few MB each


# ------------------------------------------------------------------------------ bases


def _empty_bases() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": pd.Series(dtype=object),
            "lat": pd.Series(dtype=np.float64),
            "lon": pd.Series(dtype=np.float64),
            "zone": pd.Series(dtype=object),
            "label": pd.Series(dtype=object),
            "kind": pd.Series(dtype=object),
        }
    )


def _frame(rows: list[dict]) -> pd.DataFrame:
    if not rows:
        return _empty_bases()
    return pd.DataFrame(rows, columns=BASE_COLUMNS).astype({"lat": float, "lon": float})


def clean_name(name: object, fallback: str) -> str:
    """A base's name: whitespace collapsed, control characters dropped; ``fallback`` if empty.

    Raises ValueError when it is longer than :data:`MAX_NAME_CHARS` characters.

    Examples
    --------
    >>> clean_name("  North\\t station ", "Base 1"), clean_name("", "Base 2")
    ('North station', 'Base 2')
    """
    text = "".join(c if c.isprintable() else " " for c in str(name))
    text = " ".join(text.split())
    if len(text) > MAX_NAME_CHARS:
        raise ValueError(f"the name is {len(text)} characters long; at most {MAX_NAME_CHARS}")
    return text or fallback


def _check_count(n: int) -> None:
    if n > MAX_BASES:
        raise ValueError(f"{n} bases: at most {MAX_BASES} can be placed")


def _check_unique(bases: pd.DataFrame) -> None:
    names = bases["name"]
    repeated = names[names.duplicated()].unique().tolist()
    if repeated:
        raise ValueError(f"base names must differ; repeated: {', '.join(map(repr, repeated))}")


def bases_from_zones(area: ServiceArea, zones: Sequence[str]) -> pd.DataFrame:
    """Bases at zones' points, named after the zones' labels (in the order given).

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a", "b"], "label": ["Zone 1", "Zone 2"],
    ...                      "lat": [0.0, 0.1], "lon": [0.0, 0.0]})
    >>> area = ServiceArea(grid, 8, (0, 0, 0.1, 0), ViewState(0, 0, 10))
    >>> bases_from_zones(area, ["b"])[["name", "zone", "kind"]].to_dict("records")
    [{'name': 'Zone 2', 'zone': 'b', 'kind': 'zone'}]
    """
    _check_count(len(zones))
    rows = []
    for zone in dict.fromkeys(zones):  # each zone once
        place = place_from_zone(area, zone)
        rows.append(
            {
                "name": place.label,
                "lat": place.lat,
                "lon": place.lon,
                "zone": place.zone,
                "label": place.label,
                "kind": "zone",
            }
        )
    return _frame(rows)


def bases_at_points(
    area: ServiceArea, names: Sequence[object], lats: Sequence[float], lons: Sequence[float]
) -> pd.DataFrame:
    """Bases at given points, each of which must lie in a zone of the area.

    Empty names become ``"Base 1"``, ``"Base 2"``, ...; names must differ. Raises
    ValueError naming the base (its position, from 1) that cannot be placed.
    """
    _check_count(len(names))
    rows = []
    for i, (name, lat, lon) in enumerate(zip(names, lats, lons, strict=True), start=1):
        try:
            label = clean_name(name, f"Base {i}")
            place = place_from_latlon(area, float(lat), float(lon))
        except ValueError as exc:
            raise ValueError(f"base {i}: {exc}") from None
        zone_label = area.grid["label"].iloc[area.zone_index[place.zone]]
        rows.append(
            {
                "name": label,
                "lat": place.lat,
                "lon": place.lon,
                "zone": place.zone,
                "label": zone_label,
                "kind": "point",
            }
        )
    bases = _frame(rows)
    _check_unique(bases)
    return bases


def combine_bases(*tables: pd.DataFrame) -> pd.DataFrame:
    """Bases tables one after the other; names must differ, at most :data:`MAX_BASES`."""
    parts = [t for t in tables if len(t)]
    combined = pd.concat(parts, ignore_index=True) if parts else _empty_bases()
    _check_count(len(combined))
    _check_unique(combined)
    return combined


def toggle_zone_base(area: ServiceArea, bases: pd.DataFrame, zone: str) -> pd.DataFrame:
    """A click on a zone: remove the bases in it, or add a base at its point if none is.

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a", "b"], "label": ["Zone 1", "Zone 2"],
    ...                      "lat": [0.0, 0.1], "lon": [0.0, 0.0]})
    >>> area = ServiceArea(grid, 8, (0, 0, 0.1, 0), ViewState(0, 0, 10))
    >>> bases = toggle_zone_base(area, bases_from_zones(area, ["a"]), "b")
    >>> bases["zone"].tolist(), toggle_zone_base(area, bases, "a")["zone"].tolist()
    (['a', 'b'], ['b'])
    """
    inside = bases["zone"].to_numpy() == zone
    if inside.any():
        return bases.loc[~inside].reset_index(drop=True)
    return combine_bases(bases, bases_from_zones(area, [zone]))


def locate_bases(area: ServiceArea, bases: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The same bases on ``area``'s zones, and a sentence naming those removed (or None).

    The Plan page calls it on every run, so that its bases, their coverage and the
    ranking always stand on the map it draws, whatever changed since they were placed
    (the zone file, the boundaries naming the zones, the model and so its hexagons).
    Each base is located as the Predict page locates its origin and destination
    (:func:`vrvm.services.map.places.locate`): a base at a zone still on the map keeps it,
    under its current label (and name); a base at a zone no longer on it moves to the
    zone holding its point, named after that zone; a base at typed or uploaded
    coordinates keeps its point and name, in the zone now holding it. A base that no
    zone holds is removed, and so is a second base at a zone's point when two zones
    became one (a zone holds one such base, as a click toggles it). ``bases`` itself
    is returned when nothing changed.

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a", "b"], "label": ["Zone 1", "Zone 2"],
    ...                      "lat": [0.0, 0.1], "lon": [0.0, 0.0]})
    >>> bases = bases_from_zones(ServiceArea(grid, 8, (0, 0, 0.1, 0), ViewState(0, 0, 10)),
    ...                          ["a", "b"])
    >>> renamed = grid.assign(label=["North", "South"]).iloc[:1]
    >>> moved, notice = locate_bases(ServiceArea(renamed, 8, (0, 0, 0, 0), ViewState(0, 0, 10)),
    ...                              bases)
    >>> moved["name"].tolist(), moved["label"].tolist()
    (['North'], ['North'])
    >>> notice
    "The base 'Zone 2' lies in no zone of this map: it was removed."
    """
    rows, nowhere, shared, zones = [], [], [], set()
    for base in bases.itertuples(index=False):
        place = locate(area, Place(base.lat, base.lon, base.zone, base.label, kind=base.kind))
        if place is None:
            nowhere.append(str(base.name))
            continue
        if base.kind == "zone" and place.zone in zones:
            shared.append(str(base.name))
            continue
        label = str(area.grid["label"].iloc[area.zone_index[place.zone]])
        row = {"name": base.name, "lat": base.lat, "lon": base.lon, "label": label}
        if base.kind == "zone":  # at the zone's point, named after it
            zones.add(place.zone)
            row.update(name=label, lat=place.lat, lon=place.lon)
        rows.append({**row, "zone": place.zone, "kind": base.kind})
    located = _frame(rows)
    taken = located["name"].duplicated()  # a zone's new label, already a base's name
    shared += located.loc[taken, "name"].astype(str).tolist()
    located = located.loc[~taken].reset_index(drop=True)
    if not (nowhere or shared) and located.equals(bases.reset_index(drop=True)):
        return bases, None
    return located, _removed_sentence(nowhere, shared)


def _removed_sentence(nowhere: list[str], shared: list[str]) -> str | None:
    """Which bases :func:`locate_bases` removed, and why, as a sentence.

    Examples
    --------
    >>> print(_removed_sentence(["A", "B"], ["C"]))  # doctest: +NORMALIZE_WHITESPACE
    The bases 'A' and 'B' lie in no zone of this map; the base 'C' stands in the zone of
    another base: they were removed.
    """

    def named(names: list[str]) -> str:
        if len(names) == 1:
            return f"the base {names[0]!r}"
        return "the bases " + ", ".join(map(repr, names[:-1])) + f" and {names[-1]!r}"

    parts = []
    if nowhere:
        parts.append(
            f"{named(nowhere)} {'lies' if len(nowhere) == 1 else 'lie'} in no zone of this map"
        )
    if shared:
        verb = "stands" if len(shared) == 1 else "stand"
        parts.append(f"{named(shared)} {verb} in the zone of another base")
    if not parts:
        return None
    sentence = "; ".join(parts)
    it = "it was" if len(nowhere) + len(shared) == 1 else "they were"
    return f"{sentence[0].upper()}{sentence[1:]}: {it} removed."


def default_bases(area: ServiceArea, n: int = 2) -> pd.DataFrame:
    """``n`` bases at busy central zones, so that a first view is never empty.

    Central zones lie within one median trip (``area.median_trip_km``; else half the
    area's diagonal) of the demand-weighted centre of the zones (demand by
    :func:`zone_demand`: training-trip origins, else trip ends). The first base is the
    busiest central zone; each next one the busiest central zone at least a quarter of
    that distance from those chosen (the busiest remaining one when none is that far).
    """
    grid = area.grid
    demand, _ = zone_demand(area)
    lat, lon = grid["lat"].to_numpy(float), grid["lon"].to_numpy(float)
    reach = area.median_trip_km
    if reach is None or not np.isfinite(reach) or reach <= 0:
        lat_lo, lon_lo, lat_hi, lon_hi = area.bbox
        reach = 0.5 * float(haversine_km(lat_lo, lon_lo, lat_hi, lon_hi))
    centre = np.average(lat, weights=demand), np.average(lon, weights=demand)
    central = haversine_km(*centre, lat, lon) <= reach
    order = np.argsort(np.where(central, -demand, np.inf), kind="stable")
    chosen: list[int] = []
    for _ in range(min(n, len(grid))):
        free = order[~np.isin(order, chosen)]
        far = np.ones(free.size, dtype=bool)
        for row in chosen:
            far &= haversine_km(lat[row], lon[row], lat[free], lon[free]) >= 0.25 * reach
        chosen.append(int(free[far][0] if far.any() else free[0]))
    return bases_from_zones(area, grid["zone"].to_numpy()[chosen].tolist())


# ----------------------------------------------------------------------------- demand


def zone_demand(area: ServiceArea, demand=None) -> tuple[np.ndarray, str]:
    """Demand per zone (grid order) and a phrase saying where it comes from.

    ``demand`` given (one non-negative number per zone, see
    :func:`vrvm.services.planning.fleet_files.read_demand_csv`) is used as it is. By default:
    the training trips starting in each zone (their index by origin zone,
    :class:`~vrvm.services.map.support.TripSupport`); without kept training trips, the
    trip ends counted in each zone (``n_points``); uniform when that is all zero.
    """
    n = len(area.grid)
    if demand is not None:
        weights = np.asarray(demand, dtype=np.float64)
        if weights.shape != (n,) or not np.all(np.isfinite(weights) & (weights >= 0)):
            raise ValueError(f"demand must be {n} finite non-negative numbers, one per zone")
        if weights.sum() <= 0:
            raise ValueError("demand is zero in every zone")
        return weights, "the uploaded demand"
    support = area.support
    if support is not None and support.n_zones == n:
        origins = np.diff(support.offsets).astype(np.float64)
        if origins.sum() > 0:
            return origins, "training trips starting in each zone"
    ends = area.grid["n_points"].to_numpy(np.float64) if "n_points" in area.grid else np.zeros(n)
    if ends.sum() > 0:
        return ends, "training trip ends in each zone"
    return np.ones(n), "every zone alike"


def demand_weighted(values, weights) -> float:
    """The demand-weighted mean of per-zone values: sum_z w_z v_z / sum_z w_z.

    Examples
    --------
    >>> demand_weighted([0.5, 1.0], [1.0, 3.0])
    0.875
    """
    weights = np.asarray(weights, dtype=np.float64)
    return float(np.dot(weights, np.asarray(values, dtype=np.float64)) / weights.sum())


# --------------------------------------------------------------------------- coverage


def _pair_queries(
    origin_lat: np.ndarray, origin_lon: np.ndarray, grid: pd.DataFrame, departure
) -> pd.DataFrame:
    """Model queries from every origin to every zone's point, origin by origin."""
    n_zones = len(grid)
    n = origin_lat.size * n_zones
    return pd.DataFrame(
        {
            "origin_lat": np.repeat(origin_lat, n_zones),
            "origin_lon": np.repeat(origin_lon, n_zones),
            "dest_lat": np.tile(grid["lat"].to_numpy(float), origin_lat.size),
            "dest_lon": np.tile(grid["lon"].to_numpy(float), origin_lat.size),
            "start_time": pd.DatetimeIndex([pd.Timestamp(departure)]).repeat(n),
        }
    )


def member_cdfs(
    model: TravelTimeModel,
    lat: np.ndarray,
    lon: np.ndarray,
    grid: pd.DataFrame,
    departure,
    threshold_s: float,
) -> np.ndarray:
    """F_{m,o,z}(T): every member's P(T <= threshold) from each origin to each zone, (M, O, Z)."""
    dist = model.predict_dist(_pair_queries(lat, lon, grid, departure))
    return dist.member_cdf(threshold_s).reshape(dist.n_members, lat.size, len(grid))


@dataclass(frozen=True)
class FleetCoverage:
    """Every zone's coverage by a set of bases at one departure time and threshold.

    Attributes
    ----------
    grid : pandas.DataFrame
        The area's zones (``zone``, ``number``, ``label``, ``lat``, ``lon``,
        ``boundary``; polygon zones also ``name`` and ``geometry``) with ``best_base``
        (the name of the base dispatch would send, "" without bases), ``p_best``
        (P(best base within T)) and ``p_any`` (P(any base within T)); see the module.
    bases : pandas.DataFrame
        The bases (:data:`BASE_COLUMNS`).
    departure : pandas.Timestamp
    threshold_min : float
    prob : numpy.ndarray
        ``(n_bases, n_zones)``: each base's P(T <= threshold) to each zone.
    miss : numpy.ndarray
        ``(M, n_zones)``: per member m, prod_b (1 - F_{m,b,z}), the chance that no
        base arrives in time given the scenario m.
    """

    grid: pd.DataFrame
    bases: pd.DataFrame
    departure: pd.Timestamp
    threshold_min: float
    prob: np.ndarray = field(repr=False)
    miss: np.ndarray = field(repr=False)

    def summary(self, demand) -> dict[str, float]:
        """Demand-weighted P(any base) and P(best base) within T (``any``, ``best``)."""
        return {
            "any": demand_weighted(self.grid["p_any"], demand),
            "best": demand_weighted(self.grid["p_best"], demand),
        }

    def base_table(self, demand) -> pd.DataFrame:
        """The bases with what each serves: the zones it is the best base of (``zones``),
        their share of the demand (``demand_share``) and their demand-weighted
        P(best base within T) (``p_best_served``; NaN when it serves none)."""
        weights = np.asarray(demand, dtype=np.float64)
        table = self.bases[["name", "lat", "lon", "label"]].copy()
        if not len(table):
            return table.assign(zones=[], demand_share=[], p_best_served=[])
        best = np.argmax(self.prob, axis=0)
        served = best[None, :] == np.arange(len(table))[:, None]  # (B, Z)
        load = served @ weights
        with np.errstate(invalid="ignore", divide="ignore"):
            p_served = (served @ (weights * self.grid["p_best"].to_numpy())) / load
        table["zones"] = served.sum(axis=1).astype(np.int64)
        table["demand_share"] = load / weights.sum()
        table["p_best_served"] = np.where(load > 0, p_served, np.nan)
        return table


def fleet_coverage(
    model: TravelTimeModel,
    area: ServiceArea,
    bases: pd.DataFrame,
    departure,
    threshold_min: float,
) -> FleetCoverage:
    """P(best base within T) and P(any base within T) for every zone (see the module).

    One :meth:`~vrvm.trips.model.travel_time.TravelTimeModel.predict_dist` call for every (base,
    zone) pair; the member cdfs at T give both probabilities. Without bases both are 0.
    """
    threshold_min = float(threshold_min)
    if not (np.isfinite(threshold_min) and threshold_min > 0):
        raise ValueError(f"threshold_min must be a positive number of minutes, got {threshold_min}")
    grid = area.grid
    n_zones, n_bases = len(grid), len(bases)
    _check_count(n_bases)
    if n_bases:
        cdfs = member_cdfs(
            model,
            bases["lat"].to_numpy(float),
            bases["lon"].to_numpy(float),
            grid,
            departure,
            60.0 * threshold_min,
        )
        prob = model.recalibrate(cdfs.mean(axis=0))
        miss = np.prod(1.0 - cdfs, axis=1)
        best = np.argmax(prob, axis=0)  # the first base listed wins a tie
        p_best = prob[best, np.arange(n_zones)]
        best_base = bases["name"].to_numpy(object)[best]
    else:
        prob = np.zeros((0, n_zones))
        miss = np.ones((len(model.members_), n_zones))
        p_best = np.zeros(n_zones)
        best_base = np.full(n_zones, "", dtype=object)
    out = grid[["zone", "number", "label", "lat", "lon", "boundary"]].copy()
    if "geometry" in grid.columns:  # a planner's polygons: their names and shapes
        out.insert(3, "name", grid["place"].to_numpy())
        out["geometry"] = grid["geometry"].to_numpy()
    out["best_base"] = best_base
    out["p_best"] = p_best
    out["p_any"] = model.recalibrate(1.0 - miss.mean(axis=0))
    return FleetCoverage(
        grid=out,
        bases=bases.reset_index(drop=True),
        departure=pd.Timestamp(departure),
        threshold_min=threshold_min,
        prob=prob,
        miss=miss,
    )


def fleet_map(
    coverage: FleetCoverage, metric: str
) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """Fill colours (by ``metric``: "best" or "any"), tooltips and the legend.

    The tooltips are text in lines (the map shows ``"\\n"`` as a line break): both
    probabilities and the best base's name, HTML-escaped (it may come from an uploaded
    file, and a tooltip is HTML).
    """
    if metric not in FLEET_METRICS:
        raise ValueError(f"metric must be one of {tuple(FLEET_METRICS)}, got {metric!r}")
    grid = coverage.grid
    column = "p_best" if metric == "best" else "p_any"
    fill, legend = coverage_colors(pd.DataFrame({"prob_within": grid[column]}), "probability")
    t = f"{coverage.threshold_min:g} min"
    tips = [
        f"P(best base ≤ {t}) = {100 * best:.0f} %"
        + (f" ({html.escape(str(name))})" if name else "")
        + f"\nP(any base ≤ {t}) = {100 * anyone:.0f} %"
        for best, name, anyone in zip(grid["p_best"], grid["best_base"], grid["p_any"], strict=True)
    ]
    return fill, tips, legend


def base_markers(bases: pd.DataFrame, ranking: pd.DataFrame | None = None) -> pd.DataFrame:
    """Map markers: the bases numbered 1, 2, ... and the best candidate marked "+".

    Columns ``lat``, ``lon``, ``name`` (the marker's text), ``label`` (the base's name
    or the candidate's zone label; the map escapes it) and ``color`` (RGBA).
    """
    markers = pd.DataFrame(
        {
            "lat": bases["lat"].to_numpy(float),
            "lon": bases["lon"].to_numpy(float),
            "name": [str(i) for i in range(1, len(bases) + 1)],
            "label": bases["name"].astype(str).to_numpy(),
            "color": [rgba(ORIGIN_RGB, 255)] * len(bases),
        }
    )
    if ranking is not None and len(ranking):
        best = ranking.iloc[0]
        extra = {
            "lat": float(best["lat"]),
            "lon": float(best["lon"]),
            "name": "+",
            "label": str(best["label"]),
            "color": rgba(DEST_RGB, 255),
        }
        markers = pd.concat([markers, pd.DataFrame([extra])], ignore_index=True)
    return markers


# ------------------------------------------------------------------ one more base


def rank_new_base(
    model: TravelTimeModel,
    area: ServiceArea,
    coverage: FleetCoverage,
    demand,
    *,
    candidates: Sequence[str] | None = None,
    objective: str = "any",
    top: int | None = 10,
    block_pairs: int = _BLOCK_PAIRS,
) -> pd.DataFrame:
    """Candidate zones for one more base, best first.

    Parameters
    ----------
    model, area :
        The model and service area ``coverage`` was computed with.
    coverage : FleetCoverage
        The current bases' coverage (same departure and threshold are used).
    demand : array_like of shape (n_zones,)
        Weight of each zone (:func:`zone_demand`).
    candidates : sequence of str, optional
        Zone ids to consider; default every zone that holds no base yet. A candidate
        base stands at its zone's point.
    objective : {"any", "best"}, default="any"
        Rank by the gain in demand-weighted P(any base within T) (the coverage the
        map shows first; it also values a second base near a zone already reached,
        as a backup) or in demand-weighted P(best base within T) (what the base
        dispatch would send achieves; a new base helps only where it beats the best).
    top : int or None, default=10
        Keep the ``top`` best candidates (None: all).
    block_pairs : int
        Candidate-zone pairs predicted at once (bounds memory: a few MB per 32,768).

    Returns
    -------
    pandas.DataFrame
        ``rank`` (1 is best), ``zone``, ``number``, ``label``, ``lat``, ``lon``, then
        ``any_before``, ``any_after``, ``any_gain``, ``best_before``, ``best_after``,
        ``best_gain``: demand-weighted coverages without and with a base there; sorted
        by the objective's gain (ties: grid order).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    grid = area.grid
    weights = np.asarray(demand, dtype=np.float64)
    if weights.shape != (len(grid),):
        raise ValueError(f"demand must hold one number per zone ({len(grid)}), got {weights.shape}")
    total = weights.sum()
    if candidates is None:
        rows = np.flatnonzero(~np.isin(grid["zone"].to_numpy(), coverage.bases["zone"].to_numpy()))
    else:
        index = area.zone_index
        unknown = [z for z in candidates if z not in index]
        if unknown:
            raise ValueError(f"candidate zone(s) not in the service area: {unknown[:5]}")
        rows = np.array(sorted({index[z] for z in candidates}), dtype=np.int64)
    p_best = coverage.grid["p_best"].to_numpy()
    p_any_now = 1.0 - coverage.miss.mean(axis=0)  # before the map
    any_after = np.empty(rows.size)
    best_after = np.empty(rows.size)
    per_block = max(1, int(block_pairs) // max(len(grid), 1))
    lat, lon = grid["lat"].to_numpy(float), grid["lon"].to_numpy(float)
    for start in range(0, rows.size, per_block):
        block = rows[start : start + per_block]
        cdfs = member_cdfs(
            model, lat[block], lon[block], grid, coverage.departure, 60.0 * coverage.threshold_min
        )
        # a base at c multiplies member m's miss by (1 - F_{m,c,z}): P(any) rises by
        # (1/M) sum_m F_{m,c,z} prod_b (1 - F_{m,b,z})
        p_any = p_any_now + np.einsum("mcz,mz->cz", cdfs, coverage.miss) / cdfs.shape[0]
        any_after[start : start + block.size] = model.recalibrate(p_any) @ weights / total
        best_after[start : start + block.size] = (
            np.maximum(model.recalibrate(cdfs.mean(axis=0)), p_best[None, :]) @ weights / total
        )
    before = coverage.summary(weights)
    any_gain = any_after - before["any"]
    table = grid.iloc[rows][["zone", "number", "label", "lat", "lon"]].reset_index(drop=True)
    table["any_before"] = before["any"]
    table["any_after"] = any_after
    table["any_gain"] = any_gain
    table["best_before"] = before["best"]
    table["best_after"] = best_after
    table["best_gain"] = best_after - before["best"]
    order = np.lexsort((rows, -table[f"{objective}_gain"].to_numpy()))
    table = table.iloc[order].reset_index(drop=True)
    if top is not None:
        table = table.head(int(top))
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table
