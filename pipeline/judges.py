"""The plausibility judges at an explained root: dip (the seed), shallow, human, side by side."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from search.analysis import ResponseAnalysis
from search.chessgame import zobrist
from search.plausibility import JUDGES, Judge, Verdict, dip_verdicts, human_verdicts, shallow_verdicts
from search.settings import DiffiMaxSettings

Verdicts = dict[Judge, dict[str, Verdict]]


def shallow_analysis(
    board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings, engine: str, options: EngineOptions,
    shallow_depth: int,
) -> ResponseAnalysis | None:  # fmt: skip
    """The root's responses as a shallow search sees them: `shallow_depth` plies for the native
    engine, an engine depth limit of `shallow_depth` for a UCI engine."""
    if engine == "native":
        shallow_settings = dataclasses.replace(settings, depth=max(1, shallow_depth))
        backend = open_backend("native", EngineOptions(), exact_root=True)
    else:
        shallow_settings = dataclasses.replace(settings, depth=1)
        backend = open_backend(engine, dataclasses.replace(options, depth=shallow_depth, nodes=None, movetime=None),
                               exact_root=True)  # fmt: skip
    try:
        return backend.analyse(board, setter, shallow_settings).root_analysis
    finally:
        backend.close()


def judge_root(
    board: chess.Board,
    setter: chess.Color,
    settings: DiffiMaxSettings,
    analysis: ResponseAnalysis,
    *,
    engine: str,
    options: EngineOptions,
    shallow_depth: int,
    human_freq: str | None,
    rating: int | None,
) -> Verdicts:
    verdicts: Verdicts = {"dip": dip_verdicts(analysis)}
    shallow = shallow_analysis(board, setter, settings, engine, options, shallow_depth)
    if shallow is not None:
        verdicts["shallow"] = shallow_verdicts(analysis, shallow, settings)
    if human_freq is not None:
        from pipeline.human.corpus import human_move_counts

        counts = human_move_counts(human_freq, zobrist(board), rating)
        verdicts["human"] = human_verdicts(analysis, counts, settings)
    return verdicts


def judges_json(verdicts: Verdicts) -> dict[str, Any]:
    return {
        judge: {
            "trap_candidates": sorted(move for move, v in by_move.items() if v.trap),
            "verdicts": [dataclasses.asdict(v) for v in by_move.values()],
        }
        for judge, by_move in verdicts.items()
    }


def judges_text(verdicts: Verdicts, name: Callable[[str], str]) -> str:
    """A table: one row per reply, one column per judge (`trap`, `plausible`, `implausible`, `?`)."""
    judges = [judge for judge in JUDGES if judge in verdicts]
    moves = list(verdicts["dip"])
    width = max(len(name(move)) for move in moves)

    def cell(verdict: Verdict | None) -> str:
        if verdict is None or verdict.plausible is None:
            return "?"
        return "TRAP" if verdict.trap else ("plausible" if verdict.plausible else "implausible")

    lines = [
        "Plausibility judges",
        "-------------------",
        f"{'reply':<{width}}  " + "".join(f"{j:<13}" for j in judges),
    ]
    for move in moves:
        lines.append(f"{name(move):<{width}}  " + "".join(f"{cell(verdicts[j].get(move)):<13}" for j in judges))
    for judge in judges:
        traps = [name(move) for move, v in verdicts[judge].items() if v.trap]
        lines.append(f"{judge} judge trap candidates: {', '.join(traps) if traps else 'none'}")
    human = verdicts.get("human", {})
    if human and all(v.plausible is None for v in human.values()):
        lines.append(f"human judge: no verdict ({next(iter(human.values())).evidence} at this position)")
    return "\n".join(lines)
