"""``python -m vrvm``: the same as the ``vrvm`` command."""

from vrvm.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
