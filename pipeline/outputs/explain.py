"""DiffiMax explained at one position (`explain_position`, behind `diffimax explain`), and the
people-facing and JSON views of a DiffiMax result (the seed's inspectable report)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.human.context import MoverContext
from pipeline.judging import Judgement, evidence_rows
from search.analysis import Response, ResponseAnalysis, analysis_json, trap_json
from search.diffimax import DiffiMaxResult
from search.judges import JUDGES, JudgeSettings
from search.settings import DiffiMaxSettings
from search.values import cp_to_pawns, format_pawns

# Length of the best response's bar in the explain chart, in characters.
BAR_WIDTH = 20
# Deeper trap records listed in the text report; --json carries all of them.
DEEPER_TRAPS_SHOWN = 20


def ordinal(rank: int) -> str:
    """`Best`, `2nd`, `3rd`, `4th`, ... `21st`, as the seed's chart labels its bars."""
    if rank == 1:
        return "Best"
    suffix = "th" if rank % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"{rank}{suffix}"


def result_json(result: DiffiMaxResult, **extra: Any) -> dict[str, Any]:
    stats = result.stats
    data: dict[str, Any] = {
        "value": cp_to_pawns(result.value),
        "best_move": result.best_move,
        "nodes": stats.nodes,
        "leaves": stats.leaves,
        "cutoffs": stats.cutoffs,
        "root_analysis": analysis_json(result.root_analysis) if result.root_analysis else None,
        "traps": [trap_json(record) for record in result.traps],
        "analysed_nodes": len(result.analyses),
        "settings": result.settings.describe(),
    }
    data.update(result.extra)
    data.update(extra)
    return data


def bar_length(dip: int, span: int) -> int:
    """Longest for the best response, shorter as the dip grows (never empty)."""
    if span <= 0:
        return BAR_WIDTH
    return max(1, round(BAR_WIDTH * (1 - dip / span)))


def response_lines(
    analysis: ResponseAnalysis, name: Callable[[str], str], reasonable_cp: int
) -> tuple[list[str], list[str]]:
    """The ranked list and the bar chart of one analysis."""
    listing, chart = [], []
    width = max(len(name(r.move)) for r in analysis.responses)
    span = max(2 * reasonable_cp, max(r.dip for r in analysis.responses) + reasonable_cp // 2)
    for r in analysis.responses:
        value = format_pawns(r.value) if r.exact else f">{format_pawns(r.value)}"
        listing.append(f"{r.rank:>2}. {name(r.move):<{width}} {value:>8}   {_verdict(r)}".rstrip())
        chart.append(f"{ordinal(r.rank):<4} {value:>8} {'█' * bar_length(r.dip, span)}")
    return listing, chart


def _verdict(r: Response) -> str:
    dip = f"dip {cp_to_pawns(r.dip):.2f}"
    if r.best:
        return "best"
    if r.excluded:
        return f"excluded ({r.excluded})"
    if r.trap:
        return f"trap ({dip})"
    if not r.in_scope:
        return "out of scope"
    if not r.reasonable:
        return f"not reasonable ({dip})" if r.exact else "not reasonable (beyond the limit)"
    return f"reasonable ({dip})"


def explain_text(
    result: DiffiMaxResult,
    *,
    header: list[str],
    name: Callable[[str], str],
    path_name: Callable[[tuple[str, ...]], str],
    move_name: Callable[[tuple[str, ...], str], str] = lambda path, move: move,
) -> str:
    """The seed's report: position, ranked responses, verdict, limits, bar chart, deeper traps."""
    settings = result.settings
    lines = ["Position", "--------", *header]
    lines.append(f"Evaluation (setter's view): {format_pawns(result.value)}")
    analysis = result.root_analysis
    if analysis is not None:
        listing, chart = response_lines(analysis, name, settings.reasonable_cp)
        lines += ["", "Opponent responses", "------------------", *listing, ""]
        lines.append(f"Best response: {name(analysis.best)}")
        candidates = analysis.candidates
        if candidates:
            for candidate in candidates:
                lines.append(f"Trap candidate: {name(candidate.move)}")
                lines.append(f"Evaluation dip: {cp_to_pawns(candidate.dip):.2f}")
        elif analysis.meaningful < 2:
            lines.append("Trap candidate: none (fewer than two meaningful responses)")
        else:
            lines.append("Trap candidate: none")
        lines.append(f"Reasonable limit: {settings.reasonable_dip:.2f}")
        lines.append(f"Trap threshold: {settings.trap_dip:.2f}")
        if settings.scope == "all":
            lines.append(
                f"Reasonable alternatives: {analysis.reasonable_count}, trap candidates: "
                f"{analysis.trap_count}, trap ratio: {analysis.trap_ratio:.2f}"
            )
        lines += ["", *chart]
    elif result.best_move is not None:
        lines.append(f"Best move: {name(result.best_move)}")
    deeper = [record for record in result.traps if record.path]
    if deeper:
        lines += ["", f"Traps deeper in the tree ({len(deeper)})", "------------------------"]
        for record in deeper[:DEEPER_TRAPS_SHOWN]:
            lines.append(
                f"after {path_name(record.path)}: {move_name(record.path, record.move)} instead of "
                f"{move_name(record.path, record.best_move)} "
                f"(dip {cp_to_pawns(record.dip):.2f}, {format_pawns(record.best_value)} -> "
                f"{format_pawns(record.value)})"
            )
        if len(deeper) > DEEPER_TRAPS_SHOWN:
            lines.append(f"... and {len(deeper) - DEEPER_TRAPS_SHOWN} more (--json lists them all)")
    stats = result.stats
    lines += [
        "",
        f"Search work: {stats.nodes} node visits and {stats.leaves} leaf evaluations (a position is counted "
        f"each time a search reaches it, so several searches of one node count it several times), "
        f"depth {settings.depth}, {len(result.analyses)} opponent node{'s' if len(result.analyses) != 1 else ''} "
        "analysed.",
    ]
    return "\n".join(lines)


def san_namer(board: chess.Board) -> Callable[[str], str]:
    """Names a root move as `...Nf6` / `Nf6` in SAN, as the seed's report does."""
    prefix = "..." if board.turn == chess.BLACK else ""

    def name(uci: str) -> str:
        return prefix + board.san(chess.Move.from_uci(uci))

    return name


def san_after(board: chess.Board) -> Callable[[tuple[str, ...], str], str]:
    """Names `move` in SAN in the position reached by playing `path` from `board`."""

    def name(path: tuple[str, ...], move: str) -> str:
        replay = board.copy(stack=False)
        for step in path:
            replay.push(chess.Move.from_uci(step))
        return replay.san(chess.Move.from_uci(move))

    return name


def san_path(board: chess.Board) -> Callable[[tuple[str, ...]], str]:
    def name(path: tuple[str, ...]) -> str:
        replay = board.copy(stack=False)
        return replay.variation_san([chess.Move.from_uci(move) for move in path])

    return name


# -- the trap judges side by side ----------------------------------------------------------------


def _pawns(value: int | None) -> str:
    return "" if value is None else format_pawns(value)


def judgement_json(judgement: Judgement, judges: JudgeSettings) -> dict[str, Any]:
    evidence = judgement.evidence
    return {
        "settings": judges.describe(),
        "best": evidence.best,
        "best_value": cp_to_pawns(evidence.best_value),
        "corpus_games": evidence.corpus_games,
        "trap_candidates": {name: sorted(moves) for name, moves in judgement.verdicts.candidates.items()},
        "replies": [
            {
                **row,
                **{key: None if row[key] is None else cp_to_pawns(row[key]) for key in PAWN_FIELDS},
            }
            for row in evidence_rows(judgement, judges)
        ],
        "nodes": judgement.nodes,
    }


# Fields of an evidence row that are centipawns (shown in pawns).
PAWN_FIELDS = ("deep_value", "deeper_value", "dip", "shallow_value")


def judges_text(judgement: Judgement, judges: JudgeSettings, name: Callable[[str], str]) -> str:
    """One row per reply (best first), its evidence, and each judge's verdict: TRAP, `-` (not a
    candidate), or `?` where the judge has no evidence here."""
    evidence = judgement.evidence
    computed = judgement.verdicts.candidates
    shown = [j for j in JUDGES if j in judges.judges]
    rows = evidence_rows(judgement, judges)
    width = max(len(name(row["move"])) for row in rows)
    header = (
        f"{'reply':<{width}}  {'value':>7} {'dip':>6} {'win drop':>8} {'shallow':>7} {'human p':>7} {'corpus':>6}  "
    )
    lines = ["Trap judges", "-----------", header + "  ".join(f"{j:<9}" for j in shown)]
    for row in rows:
        p = row["model_p"]
        corpus = "" if row["corpus_count"] is None else str(row["corpus_count"])
        cells = []
        for j in shown:
            if j not in computed:
                cells.append("?")
            else:
                cells.append("TRAP" if row["verdicts"].get(j) else ("best" if row["best"] else "-"))
        lines.append(
            f"{name(row['move']):<{width}}  {_pawns(row['deep_value']):>7} {_pawns(row['dip']):>6} "
            f"{'' if row['win_drop'] is None else format(row['win_drop'], '.2f'):>8} "
            f"{'' if row['shallow_rank'] is None else row['shallow_rank']:>7} "
            f"{'' if p is None else format(p, '.0%'):>7} {corpus:>6}  " + "  ".join(f"{c:<9}" for c in cells)
        )
    lines.append("")
    for j in shown:
        if j not in computed:
            why = {
                "human": "no corpus (--human-corpus)"
                if evidence.corpus_games is None
                else f"only {evidence.corpus_games} corpus games here (needs {judges.corpus_min_games})",
                "model": "no human-move model (--human-model)",
                "practical": "no human evidence (--human-model or --human-corpus)",
                "dip": "not computed",
                "trappy": "not computed",
            }[j]
            lines.append(f"{j} judge: no verdict ({why})")
        else:
            moves = sorted(computed[j], key=name)
            lines.append(f"{j} judge trap candidates: {', '.join(name(m) for m in moves) if moves else 'none'}")
    return "\n".join(lines)


# -- one position explained ----------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    """DiffiMax and every enabled judge at one position, with what is needed to show them."""

    board: chess.Board
    setter: chess.Color
    engine: str
    """The engine as given (`--engine`): `native`, `stockfish` or a path."""
    described: dict[str, Any]
    """The backend's own description (name, limits)."""
    result: DiffiMaxResult
    """The seed's search (from the judging when the responder is to move)."""
    judgement: Judgement | None
    """The judges' evidence and verdicts; None at a setter root or a finished game."""
    judges: JudgeSettings

    def json(self) -> dict[str, Any]:
        color = {chess.WHITE: "white", chess.BLACK: "black"}
        return result_json(
            self.result,
            fen=self.board.fen(),
            side_to_move=color[self.board.turn],
            setter=color[self.setter],
            engine=self.described,
            judges=judgement_json(self.judgement, self.judges) if self.judgement else None,
        )

    def text(self) -> str:
        board, color = self.board, {chess.WHITE: "White", chess.BLACK: "Black"}
        header = [
            f"FEN: {board.fen()}",
            f"Side to move: {color[board.turn]}",
            f"Setter: {color[self.setter]}",
            f"Engine: {engine_label(self.described, self.engine)}",
        ]
        text = explain_text(
            self.result, header=header, name=san_namer(board), path_name=san_path(board), move_name=san_after(board)
        )
        if self.judgement:
            text += "\n\n" + judges_text(self.judgement, self.judges, san_namer(board))
        return text


def explain_position(
    board: chess.Board,
    setter: chess.Color,
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: str | None,
    corpus: str | None,
    context: MoverContext,
) -> Explanation:
    """DiffiMax at `board` for `setter` on `engine`: when the responder is to move (and has a
    move), every judge of `judges` and the dip judge, with the human-move `model` ('default',
    'none' or a file) and the `corpus` (a path, or None); else the seed's search alone."""
    from pipeline.human.corpus import Corpus
    from pipeline.human.models import load_move_model
    from pipeline.judging import judge_position

    move_model = load_move_model(model)
    moves = Corpus.load(corpus) if corpus else None
    backend = open_backend(engine, options, exact_root=True)
    judgement = None
    try:
        if board.turn != setter and board.legal_moves.count():
            seed_settings = dataclasses.replace(judges, judges=judges.judges | {"dip"})
            judgement = judge_position(
                backend, board, setter, settings, seed_settings, model=move_model, corpus=moves, context=context
            )
            result = judgement.seed
            assert result is not None
        else:  # a setter root or a finished game: the seed's search alone
            result = backend.analyse(board, setter, settings)
        described = backend.describe()
    finally:
        backend.close()
        if move_model is not None:
            move_model.close()
    return Explanation(board, setter, engine, described, result, judgement, judges)


def engine_label(described: dict[str, Any], engine: str) -> str:
    """The engine as people name it, with its limits: "Stockfish 15.1 (100,000 nodes per line)"."""
    if engine == "native":
        return "native (the embedded alpha-beta search on PeSTO; --engine stockfish sees much deeper)"
    limits = described.get("limits") or {}
    parts = [f"{limits['nodes']:,} nodes" if limits.get("nodes") else None,
             f"depth {limits['depth']}" if limits.get("depth") else None,
             f"{limits['movetime']:g} s" if limits.get("movetime") else None]  # fmt: skip
    limit_text = ", ".join(part for part in parts if part)
    name = described.get("engine") or described.get("name", engine)
    return f"{name} ({limit_text} per line)" if limit_text else str(name)
