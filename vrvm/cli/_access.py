"""``vrvm export``, ``vrvm audit`` and ``vrvm hash-passphrase``: sharing a model, reading
who changed what, and making the analyst passphrase's hash.

The command line acts as an analyst (whoever can run it can read the data home) and is
recorded in the home's audit log as the OS user (:func:`vrvm.services.access.policy.cli_access`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import IO

from vrvm.services.access.policy import cli_access, hash_passphrase, home_of, record
from vrvm.services.access.settings import PASSPHRASE_HASH_ENV
from vrvm.services.versions.model_export import export_model, snapped_copy
from vrvm.trips.home import MODELS_DIR, Home
from vrvm.trips.model.snapping import DEFAULT_MAX_COST
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.model_store import VERSIONS_DIR

__all__ = ["add_parsers", "record_cli"]


def record_cli(store_root: Path, action: str, **details) -> None:
    """Record a command-line change to the store at ``store_root`` in its home's log."""
    record(home_of(store_root), cli_access(), action, **details)


def _home(path: Path) -> Path | None:
    """The data home at ``path`` (a home, or its model store), None for a model directory."""
    for home in (path, path.parent if path.name == MODELS_DIR else None):
        if home is not None and (home / MODELS_DIR / VERSIONS_DIR).is_dir():
            return home
    return None


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return value


def _resolution(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 15:
        raise argparse.ArgumentTypeError(f"expected an H3 resolution 0-15, got {text!r}")
    return int(text)


def _cmd_export(args, stdout: IO[str], stderr: IO[str]) -> int:
    from vrvm.cli._reading import reading_options
    from vrvm.trips.files.reader import read_trips

    source = Path(args.source)
    trips = None
    if args.score_on is not None:
        trips, _ = read_trips(args.score_on, **reading_options(args))
    home = _home(source)
    if home is not None:
        result, _ = export_model(
            home,
            version=args.version,
            snap=not args.raw,
            resolution=args.resolution,
            max_cost=args.max_cost,
            out=args.out,
            trips=trips,
            by=cli_access(),
        )
        stdout.write(result.sentence() + f" Written to {args.out}.\n")
        return 0
    if args.version is not None:
        raise ValueError(f"{source} is a model directory, not a data home: --version needs a home")
    model = TravelTimeModel.load(source)
    if args.raw:
        model.save(args.out)
        stdout.write(f"{source} copied raw to {args.out} (relevance vectors are trips).\n")
        return 0
    snapped, choice, resolution = snapped_copy(
        model, trips, resolution=args.resolution, max_cost=args.max_cost
    )
    snapped.save(args.out)
    cost = (
        f", {100 * choice.cost:+.1f} % CRPS on {choice.n_trips:,} trips of {args.score_on}"
        if choice is not None
        else " (cost not measured: give --score-on TRIPS)"
    )
    stdout.write(f"snapped at H3 resolution {resolution}{cost}; written to {args.out}\n")
    return 0


def _cmd_audit(args, stdout: IO[str], stderr: IO[str]) -> int:
    found = _home(Path(args.home))
    home = found or Path(args.home)
    if found is not None:  # a crash's missing entries are written first (not read-only)
        Home(found).heal()
    log = Home(home).audit
    entries = log.entries(last=args.last)
    if args.json:
        stdout.write(json.dumps(entries, indent=2, ensure_ascii=False) + "\n")
    else:
        for entry in entries:
            details = {
                k: v
                for k, v in entry.items()
                if k not in ("time", "who", "how", "via", "action", "prev")
            }
            stdout.write(
                f"{entry['time']}  {entry['action']:<16} {entry['who']} ({entry['how']}, "
                f"{entry['via']})  {json.dumps(details, ensure_ascii=False)}\n"
            )
        if not entries:
            stdout.write(f"no audit entries in {log.path}\n")
    check = log.check()
    if check.torn:
        stderr.write(
            f"{len(check.torn)} unfinished line(s) (a writer that crashed), skipped: "
            f"lines {check.torn}\n"
        )
    if check.broken:
        stderr.write(
            f"vrvm: warning: the chain of entries breaks at line(s) {check.broken}: an entry "
            "was changed, inserted or removed there\n"
        )
        return 1
    missing = [] if found is None else Home(found).models.unaudited_versions()
    for version in missing:
        stderr.write(f"vrvm: warning: version {version} has no publish entry in {log.path}\n")
    return 1 if missing else 0


def _read_passphrase(stdin: IO[str], stderr: IO[str]) -> str:
    if stdin.isatty():
        first = getpass.getpass("analyst passphrase: ", stream=stderr)
        if getpass.getpass("again: ", stream=stderr) != first:
            raise ValueError("the two passphrases differ")
        return first
    return stdin.readline().rstrip("\r\n")


def _cmd_hash(args, stdout: IO[str], stderr: IO[str]) -> int:
    passphrase = _read_passphrase(sys.stdin, stderr)
    if len(passphrase) < args.min_length:
        raise ValueError(
            f"the passphrase has {len(passphrase)} characters; use at least {args.min_length}"
        )
    stdout.write(hash_passphrase(passphrase) + "\n")
    stderr.write(f"set {PASSPHRASE_HASH_ENV} to this line (and unset the plain passphrase)\n")
    return 0


def add_parsers(commands, common: argparse.ArgumentParser, reading: argparse.ArgumentParser):
    """Register ``vrvm export``, ``vrvm audit`` and ``vrvm hash-passphrase``."""
    export = commands.add_parser(
        "export",
        parents=[common, reading],
        help="export a model to share it, its relevance vectors snapped to zone centres",
        description="Write a model directory to share. By default its relevance vectors, "
        "which are training trips, are moved to the centres of H3 cells and the middle of "
        "15-minute slots, at the coarsest resolution whose CRPS cost stays within "
        "--max-cost, measured on the home's kept training trips (or --score-on TRIPS). "
        "SOURCE is a data home (its active version, or --version), its model store, or a "
        "model directory. An export from a home is recorded in its audit log.",
    )
    export.add_argument("source", metavar="SOURCE", help="data home, model store or model dir")
    export.add_argument("--out", required=True, metavar="DIR", help="model directory to write")
    export.add_argument("--version", type=int, default=None, help="a home's version (active)")
    export.add_argument(
        "--raw",
        action="store_true",
        help="keep the exact relevance vectors (personal data: trips' ends and times)",
    )
    export.add_argument(
        "--resolution",
        type=_resolution,
        default=None,
        help="H3 resolution to snap to (default: chosen by the cost)",
    )
    export.add_argument(
        "--max-cost",
        type=_fraction,
        default=DEFAULT_MAX_COST,
        metavar="FRACTION",
        help=f"largest relative CRPS increase accepted ({DEFAULT_MAX_COST:g})",
    )
    export.add_argument(
        "--score-on", metavar="TRIPS", default=None, help="trips to measure the cost on"
    )
    export.set_defaults(handler=_cmd_export)

    audit = commands.add_parser(
        "audit",
        parents=[common],
        help="print a data home's audit log: who changed what, and when",
        description="Print the audit log of a data home (audit.jsonl): uploads, training, "
        "publishing, activating, deleting, exports and sign-ins, oldest first, and check "
        "its chain of entries (exit 1 when an entry was changed, inserted or removed, or "
        "when a model version has no publish entry: each is named). Opening the home "
        "first writes the entries a crashed writer left in the store's journal.",
    )
    audit.add_argument("home", metavar="HOME", help="data home (or its model store)")
    audit.add_argument("--last", type=int, default=None, metavar="N", help="the last N only")
    audit.add_argument("--json", action="store_true", help="print the entries as JSON")
    audit.set_defaults(handler=_cmd_audit)

    hashing = commands.add_parser(
        "hash-passphrase",
        parents=[common],
        help="print the scrypt hash of an analyst passphrase",
        description=f"Read a passphrase (twice, without echo, on a terminal; else one line "
        f"of standard input) and print its scrypt hash for {PASSPHRASE_HASH_ENV}.",
    )
    hashing.add_argument(
        "--min-length", type=int, default=12, help="refuse shorter passphrases (12)"
    )
    hashing.set_defaults(handler=_cmd_hash)
