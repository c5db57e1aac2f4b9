"""Arrive-by for a notebook: the latest departure that is on time with a chosen probability.

:func:`arrive_by` is the Plan page's and ``vrvm arrive-by``'s search
(:func:`vrvm.services.answers.schedule.arrive_by`): departures every minute over the hours
before the deadline, then bisection to the second, keeping the latest departure whose
P(arrive by the deadline) = F_dep(deadline - dep) reaches the probability asked for.
The answer is an :class:`ArriveByPlan`: the departure (time-zone aware, in the model's
zone) and the predictive distribution of the trip leaving then.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.answers.schedule import DEFAULT_SEARCH_HOURS
from vrvm.services.answers.schedule import arrive_by as search_arrive_by
from vrvm.services.notebook.inputs import answer_area, area_place
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["ArriveByPlan", "arrive_by"]


@dataclass(frozen=True)
class ArriveByPlan:
    """The latest departure arriving by the deadline with the probability asked for.

    Attributes
    ----------
    departure : pandas.Timestamp
        The latest departure (to the second, time-zone aware, in the model's zone).
    distribution : MixtureDistribution
        The travel time (seconds) of the trip leaving at ``departure``: ``cdf``,
        ``ppf``, ``pdf``, ``sample``, ...
    prob_on_time : float
        P(arriving by the deadline) leaving at ``departure`` (at least ``probability``).
    deadline : pandas.Timestamp
        When to be there (time-zone aware).
    probability : float
        The probability asked for.
    curve : pandas.DataFrame
        Every searched departure, earliest first: ``departure``, ``minutes_before``,
        ``prob_on_time``, ``median_min`` and ``quantile_min`` (the travel time's
        ``probability``-quantile).
    """

    departure: pd.Timestamp
    distribution: MixtureDistribution = field(repr=False)
    prob_on_time: float
    deadline: pd.Timestamp
    probability: float
    curve: pd.DataFrame = field(repr=False)

    @property
    def minutes_before(self) -> float:
        """How long before the deadline to leave, in minutes."""
        return (self.deadline - self.departure).total_seconds() / 60.0


def arrive_by(
    model: TravelTimeModel,
    origin,
    destination,
    *,
    deadline,
    probability: float = 0.9,
    search_hours: float = DEFAULT_SEARCH_HOURS,
    trips: pd.DataFrame | None = None,
) -> ArriveByPlan:
    """The latest departure from ``origin`` that reaches ``destination`` by ``deadline``
    with probability at least ``probability``.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    origin, destination : GeoDataFrame, DataFrame, str, shapely.Point or (lat, lon)
        One place each (a one-row frame, an H3 cell id, a Point with x = longitude, or a
        ``(lat, lon)`` pair); each must lie in the model's extent.
    deadline : datetime-like
        When to be there; a naive time is a wall-clock time in the model's zone.
    probability : float, default=0.9
        The probability of being on time, in (0, 1).
    search_hours : float, default=3
        How far before the deadline departures are searched (at most 24).
    trips : pandas.DataFrame, optional
        The model's training trips: each end is then located in the zones where they
        go, as the dashboard locates a clicked place.

    Returns
    -------
    ArriveByPlan

    Raises
    ------
    ValueError
        When no departure in the searched hours is on time with that probability
        (naming the best one found), or for a place outside the model's area.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> plan = arrive_by(model, (-40.0, -30.0), (-39.95, -29.9),
    ...                  deadline="2024-03-12 09:00", probability=0.9)
    >>> str(plan.departure.tz), plan.departure < plan.deadline, plan.prob_on_time >= 0.9
    ('UTC', True, True)
    >>> seconds = (plan.deadline - plan.departure).total_seconds()
    >>> bool(abs(plan.distribution.cdf(seconds)[0] - plan.prob_on_time) < 1e-9)
    True
    """
    area = answer_area(model, trips)
    start = area_place(model, area, origin, "origin")
    end = area_place(model, area, destination, "destination")
    answer = search_arrive_by(model, start, end, deadline, probability, search_hours=search_hours)
    if not answer.found:
        raise ValueError(answer.reason)
    return ArriveByPlan(
        departure=answer.departure,
        distribution=answer.forecast.dist,
        prob_on_time=float(answer.prob_at_departure),
        deadline=answer.deadline,
        probability=answer.prob,
        curve=answer.curve,
    )
