"""Geography: the one great-circle distance and the one local projection of vrvm.

Geodesy uses a spherical Earth of mean radius ``R = 6371.0088`` km (IUGG mean radius
R1), which is accurate to about 0.5 % against the WGS84 ellipsoid - far below the noise
in urban travel times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EARTH_RADIUS_KM", "LocalProjection", "haversine_km"]

#: Mean Earth radius R1 = (2a + b) / 3 of the WGS84 ellipsoid, in kilometres.
EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    r"""Great-circle distance in kilometres between points given in degrees.

    Vectorised over broadcastable arrays.

    Parameters
    ----------
    lat1, lon1 : array-like of float
        Latitude and longitude of the first points, in degrees.
    lat2, lon2 : array-like of float
        Latitude and longitude of the second points, in degrees.

    Returns
    -------
    numpy.ndarray
        Distances in km (a 0-d array for scalar input). NaN where any input is NaN.

    Notes
    -----
    Haversine formula on a sphere of radius ``R = EARTH_RADIUS_KM``:

    .. math::

        a = \sin^2\frac{\Delta\varphi}{2}
            + \cos\varphi_1 \cos\varphi_2 \sin^2\frac{\Delta\lambda}{2},
        \qquad d = 2 R \arcsin\sqrt{a},

    which, unlike the spherical law of cosines, stays accurate for distances of metres.

    Examples
    --------
    >>> from vrvm.trips.places.geo import haversine_km
    >>> round(float(haversine_km(0.0, 0.0, 90.0, 0.0)), 1)  # quarter meridian, pi R / 2
    10007.6
    >>> haversine_km(41.0, -87.6, [42.0, 41.0], [-87.6, -86.6]).round(2)  # 1 deg north, east
    array([111.2 ,  83.92])
    """
    phi1 = np.radians(np.asarray(lat1, dtype=np.float64))
    phi2 = np.radians(np.asarray(lat2, dtype=np.float64))
    dphi = phi2 - phi1
    dlam = np.radians(np.asarray(lon2, dtype=np.float64) - np.asarray(lon1, dtype=np.float64))
    a = np.sin(dphi / 2.0) ** 2 + np.cos(phi1) * np.cos(phi2) * np.sin(dlam / 2.0) ** 2
    # Rounding can push ``a`` a hair above 1 for antipodal points.
    return 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


@dataclass(frozen=True)
class LocalProjection:
    r"""Azimuthal equidistant projection of the sphere about ``(lat0, lon0)``, in km.

    Maps latitude/longitude to ``x`` (east) and ``y`` (north) kilometres on a
    plane tangent at the centre. Distances and bearings *from the centre* are exact;
    distances between two points within ``r`` km of the centre are off by a
    relative error of order ``(r / R)**2 / 6`` (about 3e-6 at 50 km), so Euclidean
    distances in the plane are a faithful stand-in for great-circle distances at
    city scale - unlike the equirectangular approximation, whose east-west scale
    drifts by ``tan(lat0) * dlat`` (0.35 % already 25 km north of Chicago).

    Parameters
    ----------
    lat0 : float
        Latitude of the projection centre, in degrees.
    lon0 : float
        Longitude of the projection centre, in degrees.

    Notes
    -----
    Spherical forms from Snyder (1987), *Map Projections - A Working Manual*,
    USGS Professional Paper 1395, eqs. (5-3), (25-2), (22-5), (22-6):

    .. math::

        \cos c = \sin\varphi_0 \sin\varphi
            + \cos\varphi_0 \cos\varphi \cos\Delta\lambda,
        \qquad k' = c / \sin c,

        x = R k' \cos\varphi \sin\Delta\lambda, \qquad
        y = R k' (\cos\varphi_0 \sin\varphi
            - \sin\varphi_0 \cos\varphi \cos\Delta\lambda).

    The angular distance ``c`` is computed with the haversine formula to stay exact
    near the centre. The projection is meant for regions well within a hemisphere
    of the centre.

    Examples
    --------
    >>> from vrvm.trips.places.geo import LocalProjection
    >>> proj = LocalProjection(lat0=41.88, lon0=-87.63)
    >>> x, y = proj.forward([41.88, 41.98], [-87.53, -87.63])
    >>> x.round(2), y.round(2)
    (array([8.28, 0.  ]), array([ 0.  , 11.12]))
    >>> lat, lon = proj.inverse(x, y)
    >>> lat.round(6), lon.round(6)
    (array([41.88, 41.98]), array([-87.53, -87.63]))
    """

    lat0: float
    lon0: float

    def __post_init__(self) -> None:
        lat0, lon0 = float(self.lat0), float(self.lon0)
        if not (np.isfinite(lat0) and -90.0 <= lat0 <= 90.0):
            raise ValueError(f"lat0 must be a latitude in [-90, 90], got {self.lat0!r}")
        if not (np.isfinite(lon0) and -180.0 <= lon0 <= 180.0):
            raise ValueError(f"lon0 must be a longitude in [-180, 180], got {self.lon0!r}")
        object.__setattr__(self, "lat0", lat0)
        object.__setattr__(self, "lon0", lon0)

    def forward(self, lat, lon) -> tuple[np.ndarray, np.ndarray]:
        """Project degrees to ``(x, y)`` km east and north of the centre."""
        phi = np.radians(np.asarray(lat, dtype=np.float64))
        dlam = np.radians(np.asarray(lon, dtype=np.float64) - self.lon0)
        phi0 = np.radians(self.lat0)
        cos_phi = np.cos(phi)
        # Angular distance c from the centre (haversine, Snyder eq. 5-3 rearranged).
        a = np.sin((phi - phi0) / 2.0) ** 2 + np.cos(phi0) * cos_phi * np.sin(dlam / 2.0) ** 2
        c = 2.0 * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))
        # k' = c / sin c (Snyder eq. 25-2), -> 1 at the centre.
        sin_c = np.sin(c)
        k = np.divide(c, sin_c, out=np.ones_like(c), where=sin_c > 1e-15)
        x = EARTH_RADIUS_KM * k * cos_phi * np.sin(dlam)  # Snyder eq. 22-5
        y = (  # Snyder eq. 22-6
            EARTH_RADIUS_KM
            * k
            * (np.cos(phi0) * np.sin(phi) - np.sin(phi0) * cos_phi * np.cos(dlam))
        )
        return x, y

    def inverse(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """Map ``(x, y)`` km back to ``(lat, lon)`` degrees (Snyder eqs. 20-14, 20-15)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        rho = np.hypot(x, y)
        c = rho / EARTH_RADIUS_KM  # Snyder eq. 25-15
        phi0 = np.radians(self.lat0)
        sin_c, cos_c = np.sin(c), np.cos(c)
        y_over_rho = np.divide(y, rho, out=np.zeros_like(rho), where=rho > 0)
        phi = np.arcsin(np.clip(cos_c * np.sin(phi0) + y_over_rho * sin_c * np.cos(phi0), -1, 1))
        dlam = np.arctan2(x * sin_c, rho * np.cos(phi0) * cos_c - y * np.sin(phi0) * sin_c)
        lon = (np.degrees(dlam) + self.lon0 + 180.0) % 360.0 - 180.0
        return np.degrees(phi), lon
