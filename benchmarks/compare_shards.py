"""The soak run's comparison (`bench_soak.compare`: EXCEPT ALL both ways, per table, every column
but `reused`) between the committed shards of a run stopped early, or still running, and the same
shards of a finished one:

    python -m benchmarks.compare_shards PARTIAL FULL

The soak run's second undisturbed run was compared so (docs/results/mining.md, *Soak run*).
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.bench_soak import compare


def main(partial: Path, full: Path) -> None:
    shard_ids = sorted(path.name for path in (partial / "shards").iterdir() if path.is_dir())
    print(f"{len(shard_ids)} shards of {partial} against {full}")
    for table, counts in compare(partial, full, shard_ids).items():
        print(f"{table}: {counts}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
