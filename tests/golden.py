"""Golden datasets: the seed's analysis (the dip judge) must stay as the original code mined it.

`projection` keeps, of a dataset's rows, what schema version 1 recorded (the seed's DiffiMax),
under version 1's names, and drops what depends on where the files lie (the source path and the
hash in shard ids). The digests in `tests/golden/` were made from datasets mined by the code as
it stood before the trap judges (commit a8a59fe), so a change to any value, dip, rank, verdict,
refutation or node count of the seed's analysis fails the test.

Two columns changed on purpose since, with the per-worker tables (issue 17), and only they:
`nodes` of the native runs (each position now starts from an empty native table, so its node count
is its own: +5.8 % on famous.pgn) and `reused` (now: served from the worker's table). Before their
digests were taken again, the datasets of the code before that change (3f309e4) and after it were
compared row by row and column by column: every other column of every row was equal.

`reused` then left the projection: since the write tasks hand the workers their parts (issue 31),
which occurrence of a repeated key a worker's table serves follows the order the parts arrive,
which is not fixed. The digests were taken again without it from the code before that change
(4f6ca6a, whose projection minus `reused` is the new code's, every run).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

# Sort keys that make two datasets comparable row for row.
ORDER = {
    "games": ["game_id"],
    "positions": ["game_id", "ply"],
    "responses": ["game_id", "ply"],
    "traps": ["game_id", "ply", "path", "move"],
    "errors": ["source", "shard_id", "game_index", "game_id", "ply", "reason"],
}
# Columns of the games table added after version 1 (not the seed's analysis).
LATER_GAME_COLUMNS = frozenset({"link", "digest", "opening_header", "url", "moves_digest"})
SHARD_HASH = re.compile(r"-[0-9a-f]{8}-(\d{6})$")
# Version 1's columns of the seed's analysis, and where version 2 keeps them.
RESPONSE_COLUMNS = {
    "game_id": "game_id",
    "ply": "ply",
    "position_key": "position_key",
    "setter": "setter",
    "responder": "responder",
    "value": "value",
    "best_move": "best_move",
    "move_played": "move_played",
    "played_class": "played_class",
    "played_value": "played_value",
    "played_dip": "played_dip",
    "played_exact": "played_exact",
    "legal": "legal",
    "meaningful": "meaningful",
    "reasonable_count": "reasonable_count",
    "trap_count": "trap_count_dip",
    "trap_ratio": "trap_ratio",
    "trap_node": "trap_node_dip",
    "tree_traps": "tree_traps",
    "analysed_nodes": "analysed_nodes",
    "nodes": "nodes",
    "choice_moves": "choice_moves",
    "choice_trap_moves": "choice_trap_moves",
    "chose_trap_move": "chose_trap_move",
    "reasonable_dip": "reasonable_dip",
    "trap_dip": "trap_dip",
    "scope": "scope",
    "depth": "depth",
    "backend": "backend",
}
ITEM_COLUMNS = {
    "move": "move",
    "value": "value",
    "exact": "exact",
    "dip": "dip",
    "rank": "rank",
    "excluded": "excluded",
    "in_scope": "in_scope",
    "reasonable": "reasonable",
    "trap": "by_dip",
}
TRAP_COLUMNS = {
    name: name
    for name in (
        "game_id",
        "ply",
        "root_key",
        "path",
        "node_fen",
        "node_ply",
        "setter",
        "responder",
        "best_move",
        "best_value",
        "move",
        "value",
        "dip",
        "rank",
        "refutation",
        "move_played",
        "fell",
        "reasonable_dip",
        "trap_dip",
        "scope",
        "depth",
        "backend",
    )
}


def _place(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    if isinstance(out.get("source"), str):
        out["source"] = out["source"].rsplit("/", 1)[-1]
    if isinstance(out.get("shard_id"), str):
        out["shard_id"] = SHARD_HASH.sub(r"-\1", out["shard_id"])
    return out


def _project(name: str, row: dict[str, Any], version: int) -> dict[str, Any]:
    if version == 1:
        return row
    if name == "responses":
        out = {old: row[new] for old, new in RESPONSE_COLUMNS.items()}
        out["responses"] = [{old: item[new] for old, new in ITEM_COLUMNS.items()} for item in row["responses"]]
        return out
    if name == "traps":
        return {old: row[new] for old, new in TRAP_COLUMNS.items()}
    if name == "games":
        return {column: value for column, value in row.items() if column not in LATER_GAME_COLUMNS}
    return row


def projection(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The rows of every table, in version 1's terms, path-independent, in a fixed order."""
    tables = {}
    for name in ORDER:
        rows = []
        for path in sorted(root.glob(f"shards/*/{name}.parquet")):
            table = pq.read_table(path)
            version = int((table.schema.metadata or {}).get(b"diffimax.schema_version", b"1"))
            rows += [_project(name, _place(row), version) for row in table.to_pylist()]
        rows.sort(key=lambda row, name=name: json.dumps([row[k] for k in ORDER[name]], default=str))
        tables[name] = rows
    return tables


def digests(root: Path) -> dict[str, str]:
    """SHA-256 of each table's projection, and the row counts."""
    found: dict[str, str] = {}
    for name, rows in projection(root).items():
        text = json.dumps(rows, sort_keys=True, default=str)
        found[name] = f"{len(rows)} {hashlib.sha256(text.encode()).hexdigest()}"
    return found
