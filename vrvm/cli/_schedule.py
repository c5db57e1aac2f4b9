"""``vrvm arrive-by``: the latest departure that arrives by a deadline with probability p."""

from __future__ import annotations

import argparse
from typing import IO

from vrvm.cli._args import date_time
from vrvm.services.answers import schedule
from vrvm.services.map.places import Place, parse_latlon
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["add_arrive_by_parser", "cmd_arrive_by"]


def latlon(text: str) -> tuple[float, float]:
    """argparse type: ``"LAT,LON"`` in degrees (as typed on the dashboard)."""
    try:
        return parse_latlon(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def probability(text: str) -> float:
    """argparse type: a probability strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a probability such as 0.95, got {text!r}")
    return value


def search_hours(text: str) -> float:
    """argparse type: hours in (0, 24]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= schedule.MAX_SEARCH_HOURS:
        raise argparse.ArgumentTypeError(
            f"expected a number of hours in (0, {schedule.MAX_SEARCH_HOURS:g}], got {text!r}"
        )
    return value


def add_arrive_by_parser(commands, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``vrvm arrive-by`` with the command line's subparsers."""
    parser = commands.add_parser(
        "arrive-by",
        parents=parents,
        help="the latest departure that arrives by a deadline with probability p",
        description="Find the latest departure from ORIGIN that reaches DESTINATION by "
        "the deadline with at least the given probability: departures every minute over "
        "the hours searched before the deadline, the crossing refined to the second. "
        "Prints the answer, the travel time's quantiles and arrival times leaving then, "
        "and the reliability indices (planning time, buffer, misery). A naive deadline "
        "is read in the model's time zone. Exit status 1 when no departure in the "
        "searched window meets the probability (the best one is said).",
    )
    parser.add_argument("model", metavar="MODEL", help="model directory")
    where = "in degrees; with a negative latitude write the option with '=' ({}=-39.98,-30.01)"
    parser.add_argument(
        "--origin", type=latlon, required=True, metavar="LAT,LON", help=where.format("--origin")
    )
    parser.add_argument(
        "--destination",
        type=latlon,
        required=True,
        metavar="LAT,LON",
        help=where.format("--destination"),
    )
    parser.add_argument(
        "--deadline", type=date_time, required=True, metavar="TIME", help='e.g. "2016-05-03 09:00"'
    )
    parser.add_argument(
        "--prob",
        type=probability,
        default=0.95,
        help="required probability of arriving by the deadline (0.95)",
    )
    parser.add_argument(
        "--search-hours",
        type=search_hours,
        default=schedule.DEFAULT_SEARCH_HOURS,
        metavar="HOURS",
        help=f"how far before the deadline to search ({schedule.DEFAULT_SEARCH_HOURS:g})",
    )
    parser.add_argument(
        "--curve", metavar="FILE", help="also write P(arrive by the deadline) per departure as CSV"
    )
    parser.set_defaults(handler=cmd_arrive_by)


def _point(lat_lon: tuple[float, float]) -> Place:
    lat, lon = lat_lon
    return Place(lat, lon, None, f"({lat:.5f}, {lon:.5f})", kind="point")


def format_answer(answer: schedule.ArriveBy) -> str:
    """The answer, the arrival times leaving then and the reliability indices, as text."""
    lines = [answer.sentence()]
    if answer.found:
        lines.append(
            f"latest departure {answer.departure.isoformat()}: P(arrive in time) = "
            f"{100 * answer.prob_at_departure:.2f} %, {answer.minutes_allowed:.1f} min before "
            "the deadline"
        )
        lines += ["", "leaving then:", f"  {'quantile':<9}{'minutes':>8}  arrival"]
        for row in answer.arrival_table().itertuples(index=False):
            lines.append(f"  {row.quantile:<9}{row.minutes:>8.1f}  {row.arrival}")
        when = f"{answer.departure:%H:%M:%S}"
    else:
        when = f"{answer.best_departure:%H:%M} (the best departure searched)"
    lines += ["", f"reliability indices leaving at {when}:"]
    for row in answer.indices.table().to_dict(orient="records"):
        lines.append(f"  {row['index']:<20}{row['value']:>6.2f}  {row['meaning']}")
    lines.append("  " + answer.indices.free_flow_sentence())
    return "\n".join(lines)


def cmd_arrive_by(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm arrive-by``: load, search, print; 1 when no departure meets p."""
    model = TravelTimeModel.load(args.model)
    answer = schedule.arrive_by(
        model,
        _point(args.origin),
        _point(args.destination),
        args.deadline,
        args.prob,
        search_hours=args.search_hours,
    )
    stdout.write(format_answer(answer) + "\n")
    if args.curve:
        with open(args.curve, "wb") as handle:
            handle.write(schedule.curve_csv(answer))
        if not args.quiet:
            stderr.write(f"wrote the curve ({len(answer.curve):,} departures) to {args.curve}\n")
    return 0 if answer.found else 1
