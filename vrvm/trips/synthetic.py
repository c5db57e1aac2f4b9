r"""Synthetica, a synthetic city: the built-in default data of :mod:`vrvm`.

:func:`synthetic_city` draws taxi trips from a documented generative model of a
fictional city, **Synthetica (synthetic city)**, so that examples, tests and the app
work without downloading anything, and so that the structure a travel-time model must
learn is known exactly. :func:`synthetic_city_geojson` returns the city's map layers.

Synthetica is placed in the open South Atlantic, centred at 40.0° S, 30.0° W, more
than 1,000 km from any land, so that no one can mistake it for a real place; its
clock is UTC. Every output says it is synthetic: the trips carry
``attrs["synthetic"] = True`` and ``attrs["city"] = "Synthetica (synthetic city)"``,
and every GeoJSON feature has a ``"synthetic": true`` property.

Generative model
----------------
Geometry is in kilometres on a local plane, :math:`x` east and :math:`y` north of the
centre, mapped to degrees with :math:`\text{lat} = -40 + y / 111.195` and
:math:`\text{lon} = -30 + x / (111.195 \cos 40°)` (a sphere of radius 6371 km, so
haversine distances match plane distances to well under 1%).

*City and streets.* Residential trip ends are uniform on the square
:math:`[-9, 9]^2`. Streets form a grid, so a route between two points on the same
river bank has length :math:`L = |\Delta x| + |\Delta y|` (Manhattan distance).
Arterials run along every line :math:`x = 2k` and :math:`y = 2k` (every 2 km). A trip
drives on local streets only to reach the nearest arterial at each end,
:math:`\ell = \min(L,\ a(o) + a(d))` km with :math:`a(p)` the distance from
:math:`p` to the nearest arterial (at most 1 km), and on arterials for the remaining
:math:`L - \ell` km. Free-flow speeds are 22 km/h on local streets and 45 km/h on
arterials, and 14 / 25 km/h inside downtown.

*Downtown.* The rectangle :math:`[-2.5, 2.5] \times [0, 4]`. With
:math:`s = (\mathbb 1[o \in D] + \mathbb 1[d \in D]) / 2` the share of the trip in
downtown, the pace (hours per km) of each road class is
:math:`s / v_\text{downtown} + (1 - s) / v_\text{elsewhere}`.

*River and bridges.* A river meanders west to east along
:math:`y_r(x) = -1.5 + \sin(2 \pi x / 12)`, south of downtown. It can only be crossed
on three bridges at :math:`x_b \in \{-6, 0, 6\}` (on arterials). A trip whose ends lie
on opposite banks detours via the best bridge,
:math:`L = \min_b |o - B_b|_1 + |B_b - d|_1` with :math:`B_b = (x_b, y_r(x_b))`, so
its travel time is *not* a function of the straight-line distance.

*Airport and highway.* The airport terminal is at :math:`A = (16, -9)`, outside
town, on the south bank. A limited-access highway (80 km/h) runs
:math:`I_N = (3, 1) \to I_S = (7, -4) \to A`, crossing the river on its own bridge;
only airport trips use it. An airport trip drives on the grid from its other end to
whichever interchange :math:`I \in \{I_N, I_S\}` gives the shorter time, then along
the highway, plus 2 minutes inside the airport grounds. Airport trip ends are spread
around the terminal with a 0.25 km standard deviation.

*Time of day.* With :math:`h` the hour (UTC, the city's clock) and
:math:`g(h; \mu, w) = \exp(-\tfrac12 ((h - \mu)/w)^2)` (circular in :math:`h`), the
congestion profile is :math:`P(t) = g(h; 8, 0.9) + 0.9\, g(h; 17.5, 1.2)` on weekdays
and :math:`P(t) = 0.3\, g(h; 13, 3)` on weekends. Driving time is multiplied by
:math:`m = 1 + (0.9 s + 0.45 (1 - s)) P(t) - 0.08\, \mathbb 1[0 \le h < 5]` on the
grid (peaks hurt downtown most; nights are a little faster) and by
:math:`1 + 0.3 P(t)` on the highway.

*Noise and delays.* The travel time in seconds is

.. math::

    T = \tau_0 + (t_\text{grid}\, m + t_\text{hwy}\, m_\text{hwy} + t_\text{airport})
        \, e^{\sigma \varepsilon} + B\, \Delta

with a fixed pickup overhead :math:`\tau_0 = 120` s (boarding, paying),
log-normal multiplicative noise of :math:`\sigma = 0.22` with
:math:`\varepsilon \sim \mathcal N(0, 1)` truncated to :math:`[-2, 2.5]` (traffic can be
much slower than usual but not much faster than free flow), and occasional large
delays :math:`B \sim \text{Bernoulli}(0.03 + 0.05 P(t))`,
:math:`\Delta \sim \text{Exponential}(\text{mean } 480 \text{ s})` truncated at 30 min
(incidents, a wrong turn, waiting for a passenger). :math:`T` is rounded to whole
seconds. The result is right-skewed and heteroscedastic: exactly what a predictive
*distribution* must capture.

*Demand.* Start times cover six weeks from Monday 2024-03-04 (UTC). Days are drawn
with weight 1 on weekdays, 0.85 on Saturdays and 0.7 on Sundays; the time of day from
a 15-minute histogram with weekday density
:math:`0.08 + 0.9\, g(h; 8, 1.2) + 1.0\, g(h; 17.75, 1.5) + 0.5\, g(h; 13, 3) +
0.3\, g(h; 22, 2)` and weekend density
:math:`0.08 + 0.8\, g(h; 14, 4) + 0.6\, g(h; 23, 2.5)`, uniform within the bin.
Each trip end is downtown (a Gaussian around :math:`(0, 2)` with standard deviations
0.9 km east-west and 0.8 km north-south), residential, or the airport, with
probabilities 0.40, 0.52 and 0.08. In the weekday morning peak (weight
:math:`g(h; 8, 1.2)`) up to 0.2 of the probability moves from downtown to residential
origins and from residential to downtown destinations, and the reverse in the evening
peak (weight :math:`g(h; 17.75, 1.5)`): commuters. A trip never goes from the airport
to the airport (such a destination is redrawn as residential).

Every trip passes :func:`vrvm.clean_trips` with its default thresholds by
construction: :math:`T \ge \tau_0 = 120` s; the longest grid route (corner to
corner across the river, about 36 km, 0.9 h free-flow) at the worst congestion
(:math:`m \le 1.45` for trips outside downtown) and noise (:math:`e^{0.55}`) plus the
largest delay stays below 2.8 h; and since straight-line distance never exceeds the
route length, the straight-line speed stays below
:math:`45 / (e^{-0.44} \cdot 0.92) \approx 76` km/h on the grid and about 80 km/h
for airport trips, far from the 120 km/h limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from vrvm.trips.places.geo import EARTH_RADIUS_KM

__all__ = [
    "SYNTHETIC_CITY_CENTER",
    "SYNTHETIC_CITY_NAME",
    "SYNTHETIC_CITY_TZ",
    "synthetic_city",
    "synthetic_city_geojson",
    "synthetic_lat_lon",
]

SYNTHETIC_CITY_NAME = "Synthetica (synthetic city)"
"""Name of the synthetic city, stored in ``attrs["city"]``."""

SYNTHETIC_CITY_CENTER: tuple[float, float] = (-40.0, -30.0)
"""``(lat, lon)`` of the city centre: open ocean in the South Atlantic."""

SYNTHETIC_CITY_TZ = "UTC"
"""The city's clock."""


@dataclass(frozen=True)
class _City:
    """All parameters of the generative model (documented in the module docstring)."""

    km_per_degree: float = EARTH_RADIUS_KM * np.pi / 180  # 111.195 km on the sphere
    half_width_km: float = 9.0
    arterial_spacing_km: float = 2.0
    # speeds in km/h: (local, arterial) outside and inside downtown
    v_local: float = 22.0
    v_arterial: float = 45.0
    v_local_downtown: float = 14.0
    v_arterial_downtown: float = 25.0
    v_highway: float = 80.0
    downtown: tuple[float, float, float, float] = (-2.5, 0.0, 2.5, 4.0)  # x0, y0, x1, y1
    downtown_center: tuple[float, float] = (0.0, 2.0)
    downtown_sd: tuple[float, float] = (0.9, 0.8)
    river_y0: float = -1.5
    river_amplitude: float = 1.0
    river_wavelength: float = 12.0
    bridges_x: tuple[float, ...] = (-6.0, 0.0, 6.0)
    airport: tuple[float, float] = (16.0, -9.0)
    airport_sd: float = 0.25
    interchanges: tuple[tuple[float, float], ...] = ((3.0, 1.0), (7.0, -4.0))
    airport_access_s: float = 120.0
    pickup_overhead_s: float = 120.0
    noise_sigma: float = 0.22
    noise_bounds: tuple[float, float] = (-2.0, 2.5)
    delay_prob: tuple[float, float] = (0.03, 0.05)  # base, extra per unit of P(t)
    delay_mean_s: float = 480.0
    delay_max_s: float = 1800.0
    congestion_downtown: float = 0.9
    congestion_elsewhere: float = 0.45
    congestion_highway: float = 0.3
    night_speedup: float = 0.08
    start: str = "2024-03-04"  # a Monday
    n_days: int = 42
    day_weights: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0, 0.85, 0.7)  # Mon..Sun
    end_probs: tuple[float, float, float] = (0.40, 0.52, 0.08)  # downtown, home, airport
    commute_shift: float = 0.2


_CITY = _City()


# ---------------------------------------------------------------------------------------
# Geometry (km on the local plane)
# ---------------------------------------------------------------------------------------


def synthetic_lat_lon(x_km, y_km, city: _City = _CITY) -> tuple[np.ndarray, np.ndarray]:
    """Degrees of points given in km east (``x_km``) and north (``y_km``) of the centre.

    The map of the generative model (see the module docs), for placing examples.

    Examples
    --------
    >>> lat, lon = synthetic_lat_lon(0.0, 111.195)
    >>> round(float(lat), 4), round(float(lon), 4)
    (-39.0, -30.0)
    """
    lat0, lon0 = SYNTHETIC_CITY_CENTER
    lat = lat0 + np.asarray(y_km) / city.km_per_degree
    lon = lon0 + np.asarray(x_km) / (city.km_per_degree * np.cos(np.radians(lat0)))
    return lat, lon


def _river_y(x, city: _City = _CITY) -> np.ndarray:
    return city.river_y0 + city.river_amplitude * np.sin(
        2 * np.pi * np.asarray(x) / city.river_wavelength
    )


def _north_of_river(x, y, city: _City = _CITY) -> np.ndarray:
    return y > _river_y(x, city)


def _in_downtown(x, y, city: _City = _CITY) -> np.ndarray:
    x0, y0, x1, y1 = city.downtown
    return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def _arterial_gap(x, y, city: _City = _CITY) -> np.ndarray:
    """Distance (km) from a point to the nearest arterial."""
    step = city.arterial_spacing_km
    gap_x = np.abs(x - step * np.round(x / step))
    gap_y = np.abs(y - step * np.round(y / step))
    return np.minimum(gap_x, gap_y)


def _grid_km(x0, y0, x1, y1, city: _City = _CITY) -> np.ndarray:
    """Street-grid route length, detouring over the best bridge when crossing the river."""
    direct = np.abs(x1 - x0) + np.abs(y1 - y0)
    crosses = _north_of_river(x0, y0, city) != _north_of_river(x1, y1, city)
    bx = np.asarray(city.bridges_x)[:, None]
    by = _river_y(bx, city)
    via = (np.abs(x0 - bx) + np.abs(y0 - by) + np.abs(x1 - bx) + np.abs(y1 - by)).min(axis=0)
    return np.where(crosses, via, direct)


def _grid_hours(x0, y0, x1, y1, downtown_share, city: _City = _CITY) -> np.ndarray:
    """Free-flow driving time (h) on the street grid: local streets to the arterials."""
    length = _grid_km(x0, y0, x1, y1, city)
    local = np.minimum(length, _arterial_gap(x0, y0, city) + _arterial_gap(x1, y1, city))
    s = downtown_share
    pace_local = s / city.v_local_downtown + (1 - s) / city.v_local
    pace_arterial = s / city.v_arterial_downtown + (1 - s) / city.v_arterial
    return local * pace_local + (length - local) * pace_arterial


def _highway_km(city: _City = _CITY) -> np.ndarray:
    """Highway distance from each interchange to the airport."""
    points = np.array([*city.interchanges, city.airport])
    legs = np.hypot(*np.diff(points, axis=0).T)
    return np.cumsum(legs[::-1])[::-1]  # from interchange i to the end of the road


# ---------------------------------------------------------------------------------------
# Time of day
# ---------------------------------------------------------------------------------------


def _bump(hour, mu: float, width: float) -> np.ndarray:
    """Gaussian bump on the 24-hour circle."""
    d = (np.asarray(hour) - mu + 12.0) % 24.0 - 12.0
    return np.exp(-0.5 * (d / width) ** 2)


def _congestion(hour, weekday) -> np.ndarray:
    weekday_peaks = _bump(hour, 8.0, 0.9) + 0.9 * _bump(hour, 17.5, 1.2)
    weekend = 0.3 * _bump(hour, 13.0, 3.0)
    return np.where(weekday, weekday_peaks, weekend)


def _grid_multiplier(hour, peak, share, city: _City = _CITY) -> np.ndarray:
    """Congestion factor m on the street grid (peaks hurt downtown most)."""
    congestion = city.congestion_downtown * share + city.congestion_elsewhere * (1 - share)
    night = (hour >= 0) & (hour < 5)
    return 1 + congestion * peak - city.night_speedup * night


def _highway_multiplier(peak, city: _City = _CITY) -> np.ndarray:
    return 1 + city.congestion_highway * peak


def _airport_route(x, y, share, hour, peak, city: _City = _CITY) -> tuple[np.ndarray, np.ndarray]:
    """Free-flow (grid hours, highway hours) from town points via the better interchange."""
    m_grid = _grid_multiplier(hour, peak, share, city)
    m_hwy = _highway_multiplier(peak, city)
    grid_options, highway_options = [], []
    for (ix, iy), km in zip(city.interchanges, _highway_km(city), strict=True):
        grid_options.append(
            _grid_hours(x, y, np.full_like(x, ix), np.full_like(y, iy), share, city)
        )
        highway_options.append(np.full_like(x, km / city.v_highway))
    grid_h, highway_h = np.stack(grid_options), np.stack(highway_options)
    # drivers pick the interchange that is faster at the current congestion
    best = np.argmin(grid_h * m_grid + highway_h * m_hwy, axis=0)
    columns = np.arange(len(x))
    return grid_h[best, columns], highway_h[best, columns]


def _demand(hour, weekday: bool) -> np.ndarray:
    if weekday:
        return (
            0.08
            + 0.9 * _bump(hour, 8.0, 1.2)
            + 1.0 * _bump(hour, 17.75, 1.5)
            + 0.5 * _bump(hour, 13.0, 3.0)
            + 0.3 * _bump(hour, 22.0, 2.0)
        )
    return 0.08 + 0.8 * _bump(hour, 14.0, 4.0) + 0.6 * _bump(hour, 23.0, 2.5)


def _start_seconds(rng: np.random.Generator, n: int, city: _City) -> np.ndarray:
    """Seconds since the first midnight, from the day weights and diurnal demand."""
    days = np.arange(city.n_days)
    day_weight = np.asarray(city.day_weights)[days % 7]  # day 0 is a Monday
    day = rng.choice(days, size=n, p=day_weight / day_weight.sum())
    bins = np.arange(96)
    bin_of_day = np.empty(n, dtype=np.int64)
    weekday = day % 7 < 5
    for is_weekday in (True, False):
        mask = weekday == is_weekday
        density = _demand((bins + 0.5) / 4.0, is_weekday)
        bin_of_day[mask] = rng.choice(bins, size=int(mask.sum()), p=density / density.sum())
    within = rng.uniform(0.0, 900.0, size=n)
    return np.floor(day * 86400.0 + bin_of_day * 900.0 + within)


# ---------------------------------------------------------------------------------------
# Trip ends
# ---------------------------------------------------------------------------------------

_DOWNTOWN, _HOME, _AIRPORT = 0, 1, 2


def _draw_kind(rng, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (shape (n, 3))."""
    u = rng.uniform(size=len(probs))[:, None]
    return (u > np.cumsum(probs, axis=1)[:, :-1]).sum(axis=1)


def _draw_points(rng, kind: np.ndarray, city: _City) -> tuple[np.ndarray, np.ndarray]:
    n = len(kind)
    # Draw every kind for every row and pick: fixed draws per row keep results
    # reproducible and the code branch-free.
    cx, cy = city.downtown_center
    sx, sy = city.downtown_sd
    downtown = (rng.normal(cx, sx, n), rng.normal(cy, sy, n))
    w = city.half_width_km
    home = (rng.uniform(-w, w, n), rng.uniform(-w, w, n))
    ax, ay = city.airport
    airport = (rng.normal(ax, city.airport_sd, n), rng.normal(ay, city.airport_sd, n))
    x = np.choose(kind, [downtown[0], home[0], airport[0]])
    y = np.choose(kind, [downtown[1], home[1], airport[1]])
    return x, y


def _end_probabilities(hour, weekday, city: _City) -> tuple[np.ndarray, np.ndarray]:
    base = np.asarray(city.end_probs)
    morning = np.where(weekday, _bump(hour, 8.0, 1.2), 0.0)
    evening = np.where(weekday, _bump(hour, 17.75, 1.5), 0.0)
    # positive: commuting into downtown (morning); negative: going home (evening)
    into_town = city.commute_shift * (morning - evening)
    origin = np.tile(base, (len(hour), 1))
    dest = origin.copy()
    origin[:, _DOWNTOWN] -= into_town
    origin[:, _HOME] += into_town
    dest[:, _DOWNTOWN] += into_town
    dest[:, _HOME] -= into_town
    return origin, dest


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def synthetic_city(n_trips: int = 20000, seed: int = 0) -> pd.DataFrame:
    """Draw taxi trips in Synthetica, a synthetic city with known structure.

    The generative model (street grid with arterials, a river with three bridges, a
    congested downtown with weekday peaks, an airport on a highway, log-normal noise
    and occasional large delays) is documented in :mod:`vrvm.trips.synthetic`.

    Parameters
    ----------
    n_trips : int, default=20000
        Number of trips.
    seed : int, default=0
        Seed of the random generator; the same seed gives the same trips.

    Returns
    -------
    pandas.DataFrame
        Canonical trips (see :data:`vrvm.trips.CANONICAL_COLUMNS`) sorted by
        ``start_time`` (UTC), with ``attrs`` ``"synthetic"`` (True), ``"city"``,
        ``"tz"``, ``"schema"`` (``"canonical"``) and ``"source"``.

    See Also
    --------
    synthetic_city_geojson : the city's river, bridges, downtown and airport.

    Examples
    --------
    >>> from vrvm.trips.synthetic import synthetic_city
    >>> trips = synthetic_city(n_trips=1000, seed=1)
    >>> trips.shape
    (1000, 6)
    >>> trips.attrs["city"], trips.attrs["synthetic"], trips.attrs["tz"]
    ('Synthetica (synthetic city)', True, 'UTC')
    >>> bool(trips["travel_time_s"].min() >= 120)
    True
    """
    if isinstance(n_trips, bool) or not isinstance(n_trips, int | np.integer) or n_trips < 1:
        raise ValueError(f"n_trips must be a positive integer, got {n_trips!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    city = _CITY
    n = int(n_trips)
    rng = np.random.default_rng(seed)

    # When: day and time of day, then the hour-dependent structure.
    seconds = _start_seconds(rng, n, city)
    hour = (seconds % 86400.0) / 3600.0
    weekday = (seconds // 86400.0) % 7 < 5
    peak = _congestion(hour, weekday)

    # Where: origin and destination kinds, then points.
    origin_probs, dest_probs = _end_probabilities(hour, weekday, city)
    origin_kind = _draw_kind(rng, origin_probs)
    dest_kind = _draw_kind(rng, dest_probs)
    dest_kind = np.where((origin_kind == _AIRPORT) & (dest_kind == _AIRPORT), _HOME, dest_kind)
    ox, oy = _draw_points(rng, origin_kind, city)
    dx, dy = _draw_points(rng, dest_kind, city)

    # Free-flow driving times (hours) on the grid and, for airport trips, the highway.
    share = (_in_downtown(ox, oy, city).astype(float) + _in_downtown(dx, dy, city)) / 2
    grid_h = _grid_hours(ox, oy, dx, dy, share, city)
    highway_h = np.zeros(n)
    to_airport = dest_kind == _AIRPORT
    airport_trip = to_airport | (origin_kind == _AIRPORT)
    if airport_trip.any():
        a = airport_trip
        town_x = np.where(to_airport, ox, dx)[a]  # the end of the trip that is in town
        town_y = np.where(to_airport, oy, dy)[a]
        grid_h[a], highway_h[a] = _airport_route(town_x, town_y, share[a], hour[a], peak[a], city)

    m_grid = _grid_multiplier(hour, peak, share, city)
    m_hwy = _highway_multiplier(peak, city)
    driving_s = 3600.0 * (grid_h * m_grid + highway_h * m_hwy)
    driving_s += np.where(airport_trip, city.airport_access_s, 0.0)

    # Noise: truncated-normal exponent by inverse CDF (one uniform per trip).
    lo, hi = special.ndtr(np.asarray(city.noise_bounds))
    epsilon = special.ndtri(rng.uniform(lo, hi, size=n))
    delayed = rng.uniform(size=n) < city.delay_prob[0] + city.delay_prob[1] * peak
    # Exponential truncated at delay_max_s, by inverse CDF (no spike at the cap).
    tail = 1.0 - np.exp(-city.delay_max_s / city.delay_mean_s)
    delay_s = -city.delay_mean_s * np.log1p(-tail * rng.uniform(size=n))
    delay_s = np.where(delayed, delay_s, 0.0)
    travel_s = city.pickup_overhead_s + driving_s * np.exp(city.noise_sigma * epsilon) + delay_s

    origin_lat, origin_lon = synthetic_lat_lon(ox, oy, city)
    dest_lat, dest_lon = synthetic_lat_lon(dx, dy, city)
    start = pd.Timestamp(city.start, tz=SYNTHETIC_CITY_TZ) + pd.to_timedelta(seconds, unit="s")
    trips = pd.DataFrame(
        {
            "origin_lat": np.round(origin_lat, 6),
            "origin_lon": np.round(origin_lon, 6),
            "dest_lat": np.round(dest_lat, 6),
            "dest_lon": np.round(dest_lon, 6),
            "start_time": start,
            "travel_time_s": np.round(travel_s),
        }
    )
    trips = trips.sort_values("start_time", kind="stable", ignore_index=True)
    trips.attrs.update(
        {
            "synthetic": True,
            "city": SYNTHETIC_CITY_NAME,
            "tz": SYNTHETIC_CITY_TZ,
            "schema": "canonical",
            "source": f"synthetic_city(n_trips={n}, seed={seed})",
        }
    )
    return trips


def _feature(geometry: dict, name: str, kind: str, **extra) -> dict:
    return {
        "type": "Feature",
        "geometry": geometry,
        "properties": {
            "name": name,
            "kind": kind,
            "synthetic": True,
            "city": SYNTHETIC_CITY_NAME,
            **extra,
        },
    }


def _coords(x, y) -> list[list[float]]:
    lat, lon = synthetic_lat_lon(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    return [[round(float(a), 6), round(float(b), 6)] for a, b in zip(lon, lat, strict=True)]


def synthetic_city_geojson() -> dict:
    """Map layers of Synthetica as a GeoJSON FeatureCollection (WGS84 lon/lat).

    Features (each with properties ``name``, ``kind``, ``"synthetic": true`` and
    ``city``): the city limits (Polygon), the arterial grid (MultiLineString), the
    river (LineString), three bridges (short LineStrings across the river), downtown
    (Polygon), the airport highway (LineString) and the airport (Point).

    Returns
    -------
    dict
        A ``FeatureCollection``, JSON-serialisable, with top-level ``name`` and
        ``"synthetic": true`` members too.

    Examples
    --------
    >>> from vrvm.trips.synthetic import synthetic_city_geojson
    >>> layers = synthetic_city_geojson()
    >>> layers["type"], layers["synthetic"]
    ('FeatureCollection', True)
    >>> sorted({f["properties"]["kind"] for f in layers["features"]})
    ['airport', 'arterials', 'bridge', 'city_limits', 'downtown', 'highway', 'river']
    >>> all(f["properties"]["synthetic"] for f in layers["features"])
    True
    """
    city = _CITY
    w = city.half_width_km
    features = [
        _feature(
            {"type": "Polygon", "coordinates": [_coords([-w, w, w, -w, -w], [-w, -w, w, w, -w])]},
            "Synthetica city limits (synthetic)",
            "city_limits",
        )
    ]
    lines = []
    for k in np.arange(-w, w + 1e-9, city.arterial_spacing_km):
        k = city.arterial_spacing_km * np.round(k / city.arterial_spacing_km)
        if abs(k) <= w:
            lines.append(_coords([k, k], [-w, w]))
            lines.append(_coords([-w, w], [k, k]))
    features.append(
        _feature(
            {"type": "MultiLineString", "coordinates": lines},
            "Arterial roads (synthetic)",
            "arterials",
            speed_kmh=city.v_arterial,
        )
    )
    river_x = np.linspace(-w - 5, w + 5, 141)
    features.append(
        _feature(
            {"type": "LineString", "coordinates": _coords(river_x, _river_y(river_x))},
            "Synthetica River (synthetic)",
            "river",
        )
    )
    for label, bx in zip(("West", "Central", "East"), city.bridges_x, strict=True):
        by = float(_river_y(bx))
        features.append(
            _feature(
                {"type": "LineString", "coordinates": _coords([bx, bx], [by - 0.15, by + 0.15])},
                f"{label} Bridge (synthetic)",
                "bridge",
            )
        )
    x0, y0, x1, y1 = city.downtown
    features.append(
        _feature(
            {
                "type": "Polygon",
                "coordinates": [_coords([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0])],
            },
            "Downtown Synthetica (synthetic)",
            "downtown",
        )
    )
    road = np.array([*city.interchanges, city.airport])
    features.append(
        _feature(
            {"type": "LineString", "coordinates": _coords(road[:, 0], road[:, 1])},
            "Airport Highway (synthetic)",
            "highway",
            speed_kmh=city.v_highway,
        )
    )
    features.append(
        _feature(
            {"type": "Point", "coordinates": _coords([city.airport[0]], [city.airport[1]])[0]},
            "Synthetica International Airport (synthetic)",
            "airport",
        )
    )
    return {
        "type": "FeatureCollection",
        "name": SYNTHETIC_CITY_NAME,
        "synthetic": True,
        "features": features,
    }
