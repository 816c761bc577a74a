"""A grown repertoire as rows (`schemas/repertoire.py`: one row per node), written to Parquet, and
read back through DuckDB with the view and saved queries of `schemas/repertoire.sql`.

The rows are what every output shows: the PGN's comments and the explorer's figures are formatted
from these rows, never computed again.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.files import write_atomic
from pipeline.dataset.sql import named_queries
from pipeline.judging import HumanEvidence
from pipeline.repertoire.evidence import PositionGames
from pipeline.repertoire.expand import OpponentResult
from pipeline.repertoire.settings import RepertoireError, RepertoireSettings
from pipeline.repertoire.tree import Growth, Node
from schemas.dataset import to_signed64
from schemas.repertoire import NODES
from search.chessgame import zobrist
from search.expectimax import score
from search.notation import san_line, san_moves, with_numbers

# The file of a repertoire's nodes in its output directory.
NODES_FILE = "nodes.parquet"


@dataclass(frozen=True)
class Labels:
    """What the rows say about how the repertoire was made: the engine and the human evidence, as
    the judging kit took them."""

    engine: str
    human: HumanEvidence


def repertoire_id(settings: RepertoireSettings, start_fen: str, start_moves: Sequence[str]) -> str:
    """A short id of the settings and the start (the same request, the same id)."""
    text = json.dumps([settings.describe(), start_fen, list(start_moves)], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def node_rows(growth: Growth, labels: Labels, evidence: PositionGames | None = None) -> list[dict[str, Any]]:
    """One row per node of a grown (and backed-up) tree, ordered by depth and then by line and
    numbered in that order: a node's id in the tree is the order its parent's result came in, which
    the workers decide, and the rows must not depend on them."""
    settings, start = growth.settings, growth.start
    root_board = start.board()
    common = {
        "repertoire": repertoire_id(settings, root_board.fen(), start.moves)
        if start.fen is None
        else repertoire_id(settings, start.fen, start.moves),
        "color": "white" if settings.color == chess.WHITE else "black",
        "opponent_rating": settings.rating,
        "player_rating": settings.player_rating,
        "pool": settings.pool,
        "start_fen": root_board.fen(),
        "plies": settings.plies,
        "floor": settings.floor,
        "width": settings.width,
        "root_width": settings.root_width,
        "safety_margin": settings.diffimax.safety_margin,
        "engine": labels.engine,
        "human_model": labels.human.model,
        "human_corpus": labels.human.corpus,
    }
    rows = []
    ordered = sorted(growth.nodes, key=lambda node: (node.depth, node.path))
    number = {node.id: index for index, node in enumerate(ordered)}
    for node in ordered:
        board = start.board(node.path)
        parent = None if node.parent is None else growth.nodes[node.parent]
        sans = san_moves(root_board, node.path)
        row = common | {
            "node_id": number[node.id],
            "parent_id": None if node.parent is None else number[node.parent],
            "depth": node.depth,
            "path_uci": list(node.path),
            "line_san": with_numbers(root_board, sans),
            "move_uci": node.move,
            "move_san": sans[-1] if sans else None,
            "mover": None if parent is None else parent.to_move,
            "to_move": node.to_move,
            "fen": board.fen(),
            "position_key": to_signed64(zobrist(board)),
            "status": node.leaf or "expanded",
            "error": None if node.result is None else node.result.error,
            "value_cp": node.value,
            "score": None if node.value is None else score(node.value),
            "gain": node.gain,
            "expected": node.expected if node.value is not None else None,
            "move_gain": None if parent is None else node.move_gain,
            "recommended": node.recommended if parent is not None and parent.to_move == "player" else None,
            "reach": node.reach,
        }
        row |= reply_columns(node, parent, root_board)
        row |= opponent_columns(node)
        row |= evidence_columns(node, parent, growth, evidence)
        rows.append(row)
    return rows


def reply_columns(node: Node, parent: Node | None, root_board: chess.Board) -> dict[str, Any]:
    """A reply's columns (the opponent's move): its human evidence, drop, trap and punishment."""
    empty = dict.fromkeys(
        ("probability", "model_p", "corpus_count", "drop", "explored", "trap", "punishment_uci", "punishment_san")
    )
    if parent is None or not isinstance(parent.result, OpponentResult) or node.move is None:
        return empty
    result, move = parent.result, node.move
    trap = move in result.traps
    punishment = list(result.lines.get(move, ())) if trap else None
    after = root_board.copy()
    for uci in node.path:
        after.push_uci(uci)
    return {
        "probability": result.probabilities.get(move),
        "model_p": result.model_p.get(move),
        "corpus_count": result.corpus_counts.get(move) if result.corpus_games is not None else None,
        "drop": result.drops.get(move),
        "explored": move in result.explored,
        "trap": trap,
        "punishment_uci": punishment,
        "punishment_san": san_line(after, punishment, numbered=True) if punishment else None,
    }


def opponent_columns(node: Node) -> dict[str, Any]:
    """The columns of a position with the opponent to move: where its human evidence came from, the
    best reply, the unexplored mass, the traps, every reply's probability."""
    result = node.result
    if not isinstance(result, OpponentResult) or result.error is not None:
        return dict.fromkeys(
            (
                "source",
                "corpus_games",
                "best_reply",
                "unexplored",
                "deepened",
                "traps",
                "trap_probability",
                "trap_gain",
                "replies",
            )
        )
    traps = [m for m in result.traps if m in result.drops]
    return {
        "source": result.source,
        "corpus_games": result.corpus_games,
        "best_reply": result.best,
        "unexplored": node.unexplored,
        "deepened": node.deepened,
        "traps": len(traps),
        "trap_probability": sum(result.probabilities.get(m, 0.0) for m in traps),
        "trap_gain": sum(result.probabilities.get(m, 0.0) * result.drops[m] for m in traps),
        "replies": [
            {"move": m, "probability": p, "model_p": result.model_p.get(m), "corpus_count": result.corpus_counts.get(m)}
            for m, p in sorted(result.probabilities.items(), key=lambda item: (-item[1], item[0]))
        ],
    }


def evidence_columns(node: Node, parent: Node | None, growth: Growth, evidence: PositionGames | None) -> dict[str, Any]:
    """What the dataset's games did with the move at the parent position (`--data`)."""
    names = (
        "observed_games",
        "observed_count",
        "observed_share",
        "share_low",
        "share_high",
        "observed_results",
        "observed_score",
        "score_low",
        "score_high",
    )
    if evidence is None or parent is None or node.move is None:
        return dict.fromkeys(names)
    key = to_signed64(zobrist(growth.start.board(parent.path)))
    seen = evidence.observed(key, node.move)
    share_low, share_high = seen.share_interval()
    score_low, score_high = seen.score_interval()
    return dict(
        zip(
            names,
            (
                seen.games,
                seen.count,
                seen.share,
                share_low,
                share_high,
                seen.results,
                seen.score,
                score_low if seen.results else None,
                score_high if seen.results else None,
            ),
            strict=True,
        )
    )


def nodes_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=NODES)


def write_nodes(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """The rows as one Parquet file, written whole or not at all."""
    buffer = io.BytesIO()
    pq.write_table(nodes_table(rows), buffer, compression="zstd")
    return write_atomic(path, buffer.getvalue())


def node_files(inputs: Sequence[str | Path]) -> list[Path]:
    """The node files of `inputs`: a repertoire's output directory (its nodes.parquet) or a file."""
    found = []
    for item in inputs:
        path = Path(item)
        candidate = path / NODES_FILE if path.is_dir() else path
        if not candidate.is_file():
            raise RepertoireError(
                f"no repertoire nodes at {str(path)!r} (expected diffimax repertoire --out's {NODES_FILE})"
            )
        found.append(candidate)
    if not found:
        raise RepertoireError("no repertoire given: name an output directory of diffimax repertoire")
    return found


def connect_nodes(inputs: Sequence[str | Path]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the view `repertoire_nodes` over the node files."""
    tables = []
    for path in node_files(inputs):
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as error:
            raise RepertoireError(f"cannot read repertoire nodes {str(path)!r}: {error}") from None
        if (table.schema.metadata or {}).get(b"diffimax.table") != b"repertoire_nodes":
            raise RepertoireError(f"{str(path)!r} holds no repertoire nodes (written by diffimax repertoire)")
        tables.append(table.select(NODES.names).cast(NODES))
    connection = duckdb.connect()
    connection.register("scan_nodes", pa.concat_tables(tables))
    connection.execute(named_queries("repertoire")["views"].sql.replace("{nodes}", "scan_nodes"))
    return connection


def saved_repertoire_queries() -> dict[str, str]:
    """The saved queries over repertoires, name -> description (the view and the evidence rows aside)."""
    return {
        name: item.description
        for name, item in named_queries("repertoire").items()
        if name not in ("views", "evidence-rows", "game-openings")
    }
