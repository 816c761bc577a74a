"""EXCEPT ALL both ways, per table and every column but `reused`, between the committed shards of one
dataset (a run stopped early, or still running) and the same shards of another:

    python -m benchmarks.compare_shards PARTIAL FULL

Prints {"shards": n, table: (rows, only in PARTIAL, only in FULL), ...}. The soak run's second
undisturbed run was compared so (docs/mining.md, *Soak run*).
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

TABLES = ("games", "positions", "responses", "traps", "errors")


def compare(partial: Path, full: Path) -> dict[str, object]:
    shard_ids = sorted(path.name for path in (partial / "shards").iterdir() if path.is_dir())
    connection = duckdb.connect()
    found: dict[str, object] = {"shards": len(shard_ids)}
    for table in TABLES:
        left_files = [str(partial / "shards" / shard / f"{table}.parquet") for shard in shard_ids]
        right_files = [str(full / "shards" / shard / f"{table}.parquet") for shard in shard_ids]
        described = connection.execute(f"describe select * from read_parquet({left_files!r})").fetchall()
        columns = ", ".join(f'"{row[0]}"' for row in described if row[0] != "reused")
        left = f"select {columns} from read_parquet({left_files!r})"
        right = f"select {columns} from read_parquet({right_files!r})"
        [(rows,)] = connection.execute(f"select count(*) from ({left})").fetchall()
        [(only_left,)] = connection.execute(f"select count(*) from ({left} except all {right})").fetchall()
        [(only_right,)] = connection.execute(f"select count(*) from ({right} except all {left})").fetchall()
        found[table] = (rows, only_left, only_right)
    return found


if __name__ == "__main__":
    print(compare(Path(sys.argv[1]), Path(sys.argv[2])))
