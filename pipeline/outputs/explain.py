"""DiffiMax explained at one position (`explain_position`, behind `diffimax explain`), and the
people-facing and JSON views of a DiffiMax result (the seed's inspectable report)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import chess

from pipeline.engines.backends import describe_engine
from pipeline.engines.options import EngineOptions
from pipeline.judging import HumanEvidence, Judge, Judgement, judging_kit
from pipeline.mine.rows import reply_rows
from pipeline.outputs.explain_input import ExplainInput
from schemas.rows import ReplyItem, verdict_of
from search.analysis import Response, ResponseAnalysis, analysis_json, trap_json
from search.diffimax import DiffiMaxResult
from search.judges import JUDGES, JudgeName, JudgeSettings, plausible_share
from search.notation import san_line, san_moves, uci_as_san
from search.settings import DiffiMaxSettings
from search.values import cp_to_pawns, format_dip, format_pawns, format_percent, format_win_loss

# Length of the best response's bar in the explain chart, in characters.
BAR_WIDTH = 20
# Deeper trap records listed in the text report; --json carries all of them.
DEEPER_TRAPS_SHOWN = 20
# The falling replies the text report names (the most probable, each played at least this often);
# the rest are counted together, --json lists them all.
FALLING_SHOWN = 8
FALLING_SHOWN_P = 0.005


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
        listing.append(f"{r.rank:>2}. {name(r.move):<{width}} {value:>8}   {_verdict(r, analysis.best_value)}".rstrip())
        chart.append(f"{ordinal(r.rank):<4} {value:>8} {'█' * bar_length(r.dip, span)}")
    return listing, chart


def _verdict(r: Response, best: int) -> str:
    dip = f"dip {format_dip(r.dip, best, r.value)}"
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
    analysis = result.root_analysis
    lines.append(f"Evaluation (setter's view): {format_pawns(result.value, setter_moves_first=analysis is None)}")
    if analysis is not None:
        listing, chart = response_lines(analysis, name, settings.reasonable_cp)
        lines += ["", "Opponent responses", "------------------", *listing, ""]
        lines.append(f"Best response: {name(analysis.best)}")
        candidates = analysis.candidates
        if candidates:
            for candidate in candidates:
                lines.append(f"Trap candidate: {name(candidate.move)}")
                lines.append(f"Evaluation dip: {format_dip(candidate.dip, analysis.best_value, candidate.value)}")
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
    lines += _deeper_and_work(result, path_name, move_name)
    return "\n".join(lines)


def _deeper_and_work(
    result: DiffiMaxResult,
    path_name: Callable[[tuple[str, ...]], str],
    move_name: Callable[[tuple[str, ...], str], str],
) -> list[str]:
    """The trap records below the root, and the search's work."""
    settings = result.settings
    lines: list[str] = []
    deeper = [record for record in result.traps if record.path]
    if deeper:
        lines += ["", f"Traps deeper in the tree ({len(deeper)})", "------------------------"]
        for record in deeper[:DEEPER_TRAPS_SHOWN]:
            lines.append(
                f"after {path_name(record.path)}: {move_name(record.path, record.move)} instead of "
                f"{move_name(record.path, record.best_move)} "
                f"(dip {format_dip(record.dip, record.best_value, record.value)}, {format_pawns(record.best_value)} -> "
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
    return lines


def san_namer(board: chess.Board) -> Callable[[str], str]:
    """Names a root move as `...Nf6` / `Nf6` in SAN, as the seed's report does."""
    prefix = "..." if board.turn == chess.BLACK else ""
    return lambda uci: prefix + uci_as_san(board, uci)


def san_after(board: chess.Board) -> Callable[[tuple[str, ...], str], str]:
    """Names `move` in SAN in the position reached by playing `path` from `board`."""
    return lambda path, move: san_moves(board, (*path, move))[-1]


def variation_namer(board: chess.Board) -> Callable[[tuple[str, ...]], str]:
    """Names a line from `board` in numbered SAN ("12...Nxe4 13.Bxf7+")."""
    return lambda path: san_line(board, path, numbered=True)


# -- the trap judges side by side ----------------------------------------------------------------


def _pawns(value: int | None) -> str:
    return "" if value is None else format_pawns(value)


def judgement_json(judgement: Judgement, judges: JudgeSettings, board: chess.Board) -> dict[str, Any]:
    """The judges' evidence and verdicts, and the fall estimate (None where it is not made)."""
    evidence = judgement.evidence
    fall = judgement.fall
    return {
        "settings": judges.describe(),
        "fall_p": None if fall is None else fall.fall_p,
        "fall_p_low": None if fall is None else fall.low,
        "fall_p_high": None if fall is None else fall.high,
        "expected_loss": None if fall is None else fall.expected_loss,
        "fall_searched": None if fall is None else fall.searched,
        "falling": None
        if fall is None
        else [
            {"move": move, "san": board.san(chess.Move.from_uci(move)), "p": share}
            for move, share in falling_shares(judgement, judges)
        ],
        "best": evidence.best,
        "best_value": cp_to_pawns(evidence.best_value),
        "corpus_games": evidence.corpus_games,
        "trap_candidates": {name: sorted(moves) for name, moves in judgement.verdicts.candidates.items()},
        "replies": [reply_json(row) for row in reply_rows(judgement)],
        "nodes": judgement.nodes,
    }


# Fields of a reply row (`reply_rows`, the dataset's columns) that are centipawns (shown in pawns).
PAWN_FIELDS = ("value", "dip", "probe_value", "deeper_value", "shallow_value")


def reply_json(row: ReplyItem) -> dict[str, Any]:
    """A reply's row as `--json` shows it: its centipawns in pawns."""
    shown: dict[str, Any] = dict(row)
    for key in PAWN_FIELDS:
        shown[key] = None if shown[key] is None else cp_to_pawns(shown[key])
    return shown


# Whose verdict heads the report: the first of these with a verdict (the datasets' primary judge).
HEADLINE_ORDER: tuple[JudgeName, ...] = ("practical", "model", "human", "trappy", "dip")


def headline_judge(judgement: Judgement) -> JudgeName:
    computed = judgement.verdicts.candidates
    return next((name for name in HEADLINE_ORDER if name in computed), "dip")


def judged_text(
    result: DiffiMaxResult,
    judgement: Judgement,
    judges: JudgeSettings,
    *,
    header: list[str],
    name: Callable[[str], str],
    path_name: Callable[[tuple[str, ...]], str],
    move_name: Callable[[tuple[str, ...], str], str],
    rating: int | None = None,
) -> str:
    """The report at a responder's turn: the headline judge's verdict (the practical judge's, as
    everywhere else), then every reply once, with its value, dip, evidence, each judge's verdict
    and the seed's bar; each judge's candidates; the traps deeper in the tree."""
    analysis = result.root_analysis
    assert analysis is not None
    settings = result.settings
    computed = judgement.verdicts.candidates
    lead = headline_judge(judgement)
    leads = sorted(computed.get(lead, frozenset()), key=name)
    seed = {r.move: r for r in analysis.responses}
    lines = ["Position", "--------", *header, f"Evaluation (setter's view): {format_pawns(result.value)}", ""]
    lines.append(f"Best response: {name(analysis.best)}")
    for move in leads:
        r = seed[move]
        lines.append(
            f"Trap candidate ({lead} judge): {name(move)}, dip {format_dip(r.dip, analysis.best_value, r.value)}"
        )
    if not leads:
        few = " (fewer than two meaningful responses)" if analysis.meaningful < 2 else ""
        lines.append(f"Trap candidate ({lead} judge): none{few}")
    lines.append(
        f"Reasonable limit: {settings.reasonable_dip:.2f}; trap threshold: {settings.trap_dip:.2f} (the dip judge's)"
    )
    lines += fall_lines(judgement, judges, name, rating)
    shown = [j for j in JUDGES if j in judges.judges or j == "dip"]
    rows = {row["move"]: row for row in reply_rows(judgement)}
    width = max(len(name(r.move)) for r in analysis.responses)
    span = max(2 * settings.reasonable_cp, max(r.dip for r in analysis.responses) + settings.reasonable_cp // 2)
    head = f"{'#':>3} {'reply':<{width}} {'value':>8} {'dip':>6} {'win lost':>8} {'shallow':>7} {'human p':>7} "
    head += f"{'corpus':>6}  "
    lines += [
        "",
        "Opponent responses (each once)",
        "------------------------------",
        head + " ".join(f"{j:<9}" for j in shown) + " bar (longest: the best)",
    ]
    for r in analysis.responses:
        row = rows.get(r.move)
        value = format_pawns(r.value) if r.exact else f">{format_pawns(r.value)}"
        dip = "" if r.best else format_dip(r.dip, analysis.best_value, r.value)
        drop, p, corpus = (None, None, None) if row is None else (row["win_drop"], row["model_p"], row["corpus_count"])
        shallow_rank = None if row is None else row["shallow_rank"]
        cells = [_judge_cell(j, r, row, computed) for j in shown]
        drop_text = "" if drop is None else format_win_loss(drop)
        lines.append(
            f"{r.rank:>2}. {name(r.move):<{width}} {value:>8} {dip:>6} {drop_text:>8} "
            f"{'' if shallow_rank is None else shallow_rank:>7} "
            f"{'' if p is None else format_percent(p):>7} {'' if corpus is None else corpus:>6}  "
            + " ".join(f"{c:<9}" for c in cells)
            + " "
            + "█" * bar_length(r.dip, span)
        )
    lines.append("")
    lines += _judge_lines(judgement, judges, shown, name)
    lines += _deeper_and_work(result, path_name, move_name)
    return "\n".join(lines)


def falling_shares(judgement: Judgement, judges: JudgeSettings) -> list[tuple[str, float]]:
    """The replies the fall estimate found to fall, the most probable first, with the human
    probability it counted for each (`plausible_share`: the corpus's where it has the games)."""
    fall = judgement.fall
    replies = {reply.move: reply for reply in judgement.evidence.replies}
    if fall is None:
        return []
    return [(move, plausible_share(judgement.evidence, replies[move], judges) or 0.0) for move in fall.falling]


def fall_lines(
    judgement: Judgement, judges: JudgeSettings, name: Callable[[str], str], rating: int | None
) -> list[str]:
    """The fall estimate as a coach reads it: how many humans of this rating go wrong here, by
    how much, and on which replies."""
    if "practical" not in judges.judges:
        return []
    fall = judgement.fall
    if fall is None:
        return ["Fall probability: not estimated (no human evidence: --human-model or --human-corpus)"]
    who = "rating not given" if rating is None else f"rating {rating}"
    shares = falling_shares(judgement, judges)
    named = [(move, share) for move, share in shares[:FALLING_SHOWN] if share >= FALLING_SHOWN_P]
    falling = ", ".join(f"{name(move)} {format_percent(share)}" for move, share in named)
    falling = falling or "none of those searched"
    if len(shares) > len(named):
        rest = shares[len(named) :]
        falling += f" and {len(rest)} more ({format_percent(sum(share for _, share in rest))} together)"
    bounds = f"{format_percent(fall.low).removesuffix(' %')}-{format_percent(fall.high)}"
    if format_percent(fall.mass) != format_percent(fall.fall_p):
        # The calibration moves the probability off the replies' own shares; say both, so the
        # shares listed below add up to a figure the line shows.
        bounds += f"; the falling replies' share {format_percent(fall.mass)} before the calibration"
    return [
        f"Fall probability ({who}): {format_percent(fall.fall_p)} of humans play a reply that loses at least "
        f"{format_win_loss(judges.practical_drop)} win chance (bounds {bounds}); expected loss "
        f"{format_win_loss(fall.expected_loss)} win chance; the falling replies: {falling}"
    ]


def _judge_cell(judge: JudgeName, r: Response, row: ReplyItem | None, computed: Any) -> str:
    """A judge's verdict on one reply: best, TRAP, `-`, or `?` where it has no verdict here."""
    if r.best:
        return "best"
    if judge == "dip":
        return "TRAP" if r.trap else "-"
    if judge not in computed:
        return "?"
    return "TRAP" if row is not None and verdict_of(row, judge) else "-"


def _judge_lines(
    judgement: Judgement, judges: JudgeSettings, shown: Sequence[JudgeName], name: Callable[[str], str]
) -> list[str]:
    """Each judge's candidates, or why it has no verdict here."""
    evidence = judgement.evidence
    computed = judgement.verdicts.candidates
    lines = []
    for j in shown:
        if j in computed:
            moves = sorted(computed[j], key=name)
            lines.append(f"{j} judge trap candidates: {', '.join(name(m) for m in moves) if moves else 'none'}")
            continue
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
    return lines


# -- one position explained ----------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    """DiffiMax and every enabled judge at one position, with what is needed to show them."""

    position: ExplainInput
    """The position (its move stack the history the human-move model read) and the responder."""
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

    @property
    def board(self) -> chess.Board:
        return self.position.board

    def json(self) -> dict[str, Any]:
        color = {chess.WHITE: "white", chess.BLACK: "black"}
        judged = self.judgement
        return result_json(
            self.result,
            fen=self.board.fen(),
            side_to_move=color[self.board.turn],
            setter=color[self.setter],
            **self.position.json(),
            engine=self.described,
            judges=judgement_json(judged, self.judges, self.board) if judged else None,
        )

    def text(self) -> str:
        board, color = self.board, {chess.WHITE: "White", chess.BLACK: "Black"}
        header = [
            f"FEN: {board.fen()}",
            f"Side to move: {color[board.turn]}",
            f"Setter: {color[self.setter]}",
            f"Engine: {engine_label(self.described, self.engine)}",
            *self.position.header(responder=self.judgement is not None),
        ]
        name, path_name, move_name = san_namer(board), variation_namer(board), san_after(board)
        if self.judgement is not None and self.result.root_analysis is not None:
            return judged_text(
                self.result,
                self.judgement,
                self.judges,
                header=header,
                name=name,
                path_name=path_name,
                move_name=move_name,
                rating=self.position.context.rating,
            )
        return explain_text(self.result, header=header, name=name, path_name=path_name, move_name=move_name)


def explain_position(
    position: ExplainInput,
    setter: chess.Color,
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: str | None,
    corpus: str | None,
) -> Explanation:
    """DiffiMax at `position` for `setter` on `engine`: when the responder is to move (and has a
    move), every judge of `judges` and the dip judge, with the human-move `model` ('default',
    'none' or a file) reading the position's history and responder, and the `corpus` (a path, or
    None); else the seed's search alone."""
    board = position.board
    judgement = None
    with judging_kit(engine, options, HumanEvidence(model, corpus), exact_root=True) as kit:
        backend = kit.backend
        assert backend is not None  # an engine that cannot start raised
        if board.turn != setter and board.legal_moves.count():
            seed_settings = dataclasses.replace(judges, judges=judges.judges | {"dip"})
            judgement = Judge(kit, settings, seed_settings).position(board, setter, context=position.context)
            result = judgement.seed
            assert result is not None
        else:  # a setter root or a finished game: the seed's search alone
            result = backend.analyse(board, setter, settings)
        described = backend.describe()
    return Explanation(position, setter, engine, described, result, judgement, judges)


def engine_label(described: dict[str, Any], engine: str) -> str:
    """The engine as people name it, with its limits: "Stockfish 15.1, 100,000 nodes per line; ..."."""
    if engine == "native":
        return describe_engine(described) + " (--engine stockfish sees much deeper)"
    return describe_engine(described)
