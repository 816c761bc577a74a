"""Entrypoint for a real cluster:

    ray job submit --working-dir . -- python -m jobs.mine INPUT... --out DIR [flags]

Same flags as `diffimax mine` (see `diffimax mine --help`). Inside a Ray job the driver attaches
to the job's cluster (Ray sets RAY_ADDRESS), so `--address` is not needed.
"""

from __future__ import annotations

import sys

from pipeline.cli import main as cli_main


def main(argv: list[str] | None = None) -> None:
    cli_main("mine", prog_name="python -m jobs.mine", args=sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
