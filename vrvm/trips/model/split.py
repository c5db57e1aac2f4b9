"""Hold-out splits: which trips a model is scored on and never trained on.

The one split of vrvm: the CLI (``vrvm train --holdout``) and the dashboard's retrain
page both call :func:`split_holdout`, so the same trips, seed and fraction give the same
hold-out trips in both. A random split picks trips by a seeded hash of their identity
(:func:`~vrvm.trips.table.trip_ids`), not by their row: the same trips are held out
whatever order a file, or the trip store, lists them in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vrvm.trips.table import dateless_mask, trip_ids

__all__ = ["HOLDOUT_METHODS", "split_holdout"]

HOLDOUT_METHODS = ("random", "latest")
"""``random``: a seeded random share of the trips; ``latest``: the most recent trips."""

# The split's own random stream of a seed ("hold"), apart from the model's sharding draws.
_HOLDOUT_STREAM = 0x686F6C64


def _mix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijection of uint64 whose
    outputs look independent and uniform for distinct inputs."""
    z = values.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def split_holdout(
    trips: pd.DataFrame, fraction: float, *, how: str = "random", seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split trips into a training part and a hold-out part.

    Parameters
    ----------
    trips : pandas.DataFrame
        Canonical trips with a timezone-aware ``start_time`` (as
        :func:`vrvm.read_trips` and the trip store return them).
    fraction : float
        Share of the trips to hold out, strictly between 0 and 1; the hold-out has
        ``round(fraction * n)`` trips.
    how : {"random", "latest"}, default="random"
        ``"random"``: the trips whose seeded hash of :func:`~vrvm.trips.table.trip_ids`
        is smallest, a uniformly random subset that depends only on the trips and the
        seed, not on their order. ``"latest"``: the most recent trips (a test of the
        future; ties broken by trip id).
    seed : int, default=0
        Seed of the random split.

    Returns
    -------
    train, holdout : pandas.DataFrame
        The two parts, each in the order of ``trips``, with a fresh index and the
        ``attrs`` of ``trips``.

    Raises
    ------
    ValueError
        If ``fraction`` is outside (0, 1), ``how`` unknown, or either part would be
        empty.

    Examples
    --------
    >>> from vrvm.trips.synthetic import synthetic_city
    >>> trips = synthetic_city(100, seed=0)
    >>> train, holdout = split_holdout(trips, 0.2, seed=3)
    >>> len(train), len(holdout)
    (80, 20)
    >>> shuffled = trips.sample(frac=1.0, random_state=1)
    >>> _, again = split_holdout(shuffled, 0.2, seed=3)
    >>> sorted(again["start_time"]) == sorted(holdout["start_time"])
    True
    """
    if not 0 < fraction < 1:
        raise ValueError(f"the hold-out fraction must lie strictly between 0 and 1, got {fraction}")
    if how not in HOLDOUT_METHODS:
        raise ValueError(f"how must be one of {HOLDOUT_METHODS}, got {how!r}")
    n = len(trips)
    n_hold = round(fraction * n)
    if n_hold < 1 or n_hold >= n:
        missing = "test on" if n_hold < 1 else "train on"
        raise ValueError(
            f"holding out {100 * fraction:g} % of {n:,} trips leaves no trips to {missing}"
        )
    ids = trip_ids(trips)
    if how == "random":
        stream = np.random.SeedSequence([_HOLDOUT_STREAM, int(seed)])
        key = _mix64(ids ^ stream.generate_state(1, dtype=np.uint64)[0])
        order = np.lexsort((ids, key))  # smallest keys first
    else:
        dateless = dateless_mask(trips["start_time"])
        if dateless.any():
            raise ValueError(
                f"{int(dateless.sum()):,} of {n:,} trips have no calendar date (only a "
                "weekday and a clock), so there are no most recent trips to hold out; "
                "hold out a random share instead"
            )
        start = trips["start_time"].dt.tz_convert("UTC").to_numpy(dtype="datetime64[ns]")
        order = np.lexsort((ids, start.view(np.int64)))[::-1]  # latest first
    held = np.zeros(n, dtype=bool)
    held[order[:n_hold]] = True
    train = trips.iloc[np.flatnonzero(~held)].reset_index(drop=True)
    holdout = trips.iloc[np.flatnonzero(held)].reset_index(drop=True)
    train.attrs, holdout.attrs = dict(trips.attrs), dict(trips.attrs)
    return train, holdout
