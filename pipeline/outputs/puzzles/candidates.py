"""Candidates from a mined dataset (SQL in `schemas/puzzles.sql`, read through the DuckDB views),
the screen that drops set candidates before the engine, and the order verification follows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import chess

from pipeline.common.stats import wilson
from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import damage_named
from pipeline.dataset.sql import query
from pipeline.outputs.puzzles.records import CandidateKind, DropReason, GameInfo, PuzzleCandidate, SettingEvidence
from pipeline.outputs.puzzles.setting_move import PRACTICAL_FLOOR, SAFETY_CP
from pipeline.outputs.puzzles.standards import Standard

SET_SCREEN_CP = 100  # set, only-move rule: the miner's second best at the setting move must be this much worse (cp)


def _rows(connection: Any, sql: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    cursor = connection.execute(sql, params)
    columns = [column[0] for column in cursor.description]
    for row in cursor.fetchall():
        yield dict(zip(columns, row, strict=True))


def _game(row: dict[str, Any]) -> GameInfo:
    return GameInfo(
        game_id=row["game_id"],
        site=row.get("site"),
        event=row.get("event"),
        date=row.get("date"),
        white=row.get("white"),
        black=row.get("black"),
        white_elo=row.get("white_elo"),
        black_elo=row.get("black_elo"),
        opening=row.get("opening"),
        eco=row.get("eco"),
        start_fen=row.get("start_fen"),
    )


def unreadable(fen: Any, moves: Sequence[Any]) -> DropReason | None:
    """Why a candidate read from the dataset cannot be a puzzle at all: a FEN that is not one, a move
    that is not UCI (`unreadable`), a first move not legal in the position (`illegal`); None when
    it can be checked. A damaged shard's values must cost their candidate, not the run."""
    if not isinstance(fen, str) or not moves or not all(isinstance(move, str) for move in moves):
        return "unreadable"
    try:
        board = chess.Board(fen)
        first, *_ = [chess.Move.from_uci(move) for move in moves]
    except ValueError:
        return "unreadable"
    return None if board.is_legal(first) else "illegal"


def evidence_order(members: Sequence[PuzzleCandidate], identity: str) -> tuple[int, float, int, int, str]:
    """Puzzles first where humans fell most: falls, then the Wilson lower bound of the fall rate
    over the games that met the position, then those games, then the deepest dip, then the id."""
    games = {c.game.game_id for c in members}
    falls = {c.game.game_id for c in members if c.fell}
    low, _ = wilson(len(falls), len(games))
    return (-len(falls), -low, -len(games), -max(c.dip for c in members), identity)


def screen_setting(row: dict[str, Any], standard: Standard) -> tuple[DropReason | None, SettingEvidence | None]:
    """Why a set candidate is dropped before the engine (or None), and the miner's view of its
    setting move. The only-move rule needs the miner's best there, the next at least SET_SCREEN_CP
    worse; the practical rule needs the move within the safety margin and a trap chance of at
    least PRACTICAL_FLOOR at the root."""
    if row["fen"] is None or row["setting_move"] is None:
        return "history_missing", None
    only = bool(row["setting_best"]) and (row["second_dip"] is None or row["second_dip"] >= SET_SCREEN_CP)
    evidence = SettingEvidence(only, row["setting_dip"], float(row["trap_chance"] or 0.0), row["opponent_rating"])
    practical = (
        "practical" in standard.set_rules
        and evidence.dip is not None
        and evidence.dip <= SAFETY_CP
        and evidence.trap_chance >= PRACTICAL_FLOOR
    )
    if not only and not practical:
        return "screened", evidence
    return None, evidence


def load_candidates(
    data: Any, kinds: Sequence[CandidateKind], min_dip_cp: int, standard: Standard
) -> tuple[list[PuzzleCandidate], dict[str, dict[str, int]], int]:
    """Candidates of the given kinds, the set candidates dropped before the engine (by reason),
    and the games in the dataset."""
    state = open_dataset(data)  # a missing or damaged shard: one line naming it, before any work
    connection = connect(state)
    try:
        with damage_named(state):
            return _candidates_of(connection, kinds, min_dip_cp, standard)
    finally:
        connection.close()


def _candidates_of(
    connection: Any, kinds: Sequence[CandidateKind], min_dip_cp: int, standard: Standard
) -> tuple[list[PuzzleCandidate], dict[str, dict[str, int]], int]:
    params = {"min_dip_cp": min_dip_cp}
    early: dict[str, dict[str, int]] = {kind: {} for kind in kinds}
    punish = list(_rows(connection, query("puzzles", "punish-candidates"), params)) if "punish" in kinds else []
    sets = list(_rows(connection, query("puzzles", "set-candidates"), params)) if "set" in kinds else []
    ids = sorted({row["game_id"] for row in (*punish, *sets)})
    games = {row["game_id"]: row for row in _rows(connection, query("puzzles", "puzzle-games"), {"game_ids": ids})}
    info = {game_id: _game(row) for game_id, row in games.items()}
    candidates = []
    for row in punish:
        moves = (row["move"], *row["refutation"])
        if (dropped := unreadable(row["fen"], moves)) is not None:
            early["punish"][dropped] = early["punish"].get(dropped, 0) + 1
            continue
        candidates.append(
            PuzzleCandidate(
                "punish",
                info[row["game_id"]],
                row["ply"],
                row["fen"],
                moves,
                1,
                row["dip"],
                start_cp=row["start_cp"],
                practical_trap=bool(row["by_practical"]),
                link=row["link"],
            )
        )
    for row in sets:
        reason, evidence = screen_setting(row, standard)
        moves = (row["prior_move"], row["setting_move"], row["move"], *row["refutation"])
        reason = reason or unreadable(row["fen"], moves)
        if reason is not None:
            early["set"][reason] = early["set"].get(reason, 0) + 1
            continue
        game = info[row["game_id"]]
        candidates.append(
            PuzzleCandidate(
                "set",
                game,
                row["ply"] - 2,
                row["fen"],
                moves,
                3,
                row["dip"],
                bool(row["fell"]),
                evidence,
                practical_trap=bool(row["by_practical"]),
                link=row["link"],
            )
        )
    (count,) = connection.execute(query("puzzles", "game-count")).fetchone() or (0,)
    return candidates, early, int(count)
