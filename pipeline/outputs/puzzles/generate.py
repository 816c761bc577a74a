"""`generate_puzzles`: candidates from a mined dataset, verified under a standard, written as a
Lichess CSV, a PGN file and an interactive HTML book."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from pipeline.common.choices import parse_choices
from pipeline.common.files import write_atomic
from pipeline.common.progress import Progress
from pipeline.common.sanitize import safe_url
from pipeline.engines.process import check_engine
from pipeline.human.models import load_move_model
from pipeline.outputs.puzzles.book import render_html
from pipeline.outputs.puzzles.candidates import evidence_order, load_candidates
from pipeline.outputs.puzzles.csv_out import render_csv
from pipeline.outputs.puzzles.line import PuzzleLine
from pipeline.outputs.puzzles.openings import puzzle_opening_tags
from pipeline.outputs.puzzles.pgn_out import render_pgn
from pipeline.outputs.puzzles.rating import RATING_MODEL
from pipeline.outputs.puzzles.records import (
    BOTH,
    FORMATS,
    KINDS,
    CandidateKind,
    Checked,
    OutputFormat,
    Puzzle,
    PuzzleCandidate,
    PuzzleError,
    PuzzleKind,
    PuzzleReport,
)
from pipeline.outputs.puzzles.rules import cp_of
from pipeline.outputs.puzzles.setting_move import PRACTICAL_FLOOR, SAFETY_CP
from pipeline.outputs.puzzles.standards import BEHIND_CP, Standard, standard_of
from pipeline.outputs.puzzles.themes import cook
from pipeline.outputs.puzzles.verify import (
    DEFAULT_PER_GAME,
    EngineFailed,
    Verdict,
    Verification,
    VerifyTask,
    run_verification,
)

# A puzzle's key: the solver's position (EPD) and the solution's moves.
PuzzleKey = tuple[str, tuple[str, ...]]
# Candidates of one kind and key, merged (`merged_candidates`), and a group that passed with its written kind.
Group = tuple[tuple[CandidateKind, PuzzleKey], list[PuzzleCandidate]]
Passed = tuple[PuzzleKind, PuzzleKey, list[PuzzleCandidate], Checked]


def puzzle_id(key: tuple[str, tuple[str, ...]]) -> str:
    """A short deterministic id: the solver's position and the solution, whichever game it came from."""
    epd, rest = key
    return hashlib.sha256(f"{epd}|{' '.join(rest)}".encode()).hexdigest()[:10]


KIND_THEMES: dict[PuzzleKind, str] = {"punish": "diffimaxPunish", "set": "diffimaxSet", "defend": "diffimaxDefend"}


def themes_for(kind: PuzzleKind, checked: Checked, fen: str, standard: str = "default") -> tuple[str, ...]:
    """Lichess's themes of the verified line (`cook`, with the engine's final score), and ours:
    the kind, the practical setting rule, the standard met. Sorted."""
    final = cp_of(checked.checks[-1].best)
    tags = set(cook(PuzzleLine(fen, checked.moves, None if checked.mate else final)))
    if kind == "set" and not _mate_forced_by_setting(checked):
        tags = {tag for tag in tags if not is_mate_theme(tag)}
    tags.add(KIND_THEMES[kind])
    if checked.set_rule == "practical":
        tags.add("diffimaxPractical")
    tags.add("diffimaxStandardLichess" if standard == "lichess" else "diffimaxStandardDefault")
    return tuple(sorted(tags))


def is_mate_theme(theme: str) -> bool:
    """Lichess's mate themes: `mate`, `mateIn1`..`mateIn5` and the patterns (`backRankMate`, ...)."""
    return theme == "mate" or theme.startswith("mateIn") or theme.endswith("Mate")


def _mate_forced_by_setting(checked: Checked) -> bool:
    """A set puzzle's mate is forced against every defence only when the setting move itself mates
    by force (its score at the verification budget); after any other, the mate needs the
    opponent's error, and a mate theme would promise what the position does not hold."""
    setting = next((check for check in checked.checks if check.index == 1), None)
    return setting is not None and (setting.best.mate() or 0) > 0


def parse_kind(text: str | Sequence[str]) -> tuple[PuzzleKind, ...]:
    """`--kind`: a comma list of `punish`, `set`, `defend`, or `both` (punish and set, the
    default) or `all` (any case), in the order of KINDS; PuzzleError otherwise. The defensive kind
    is written only when it is named."""
    try:
        chosen = parse_choices(text, KINDS, "--kind", groups={"both": BOTH})
    except ValueError as error:
        raise PuzzleError(str(error)) from None
    return tuple(kind for kind in KINDS if kind in chosen)


def parse_formats(formats: str | Sequence[str]) -> tuple[OutputFormat, ...]:
    """`--files`: `csv,pgn` or ["csv", "pgn"] -> ("csv", "pgn"), `all` -> every one; PuzzleError on
    an unknown name."""
    try:
        return cast(tuple[OutputFormat, ...], parse_choices(formats, FORMATS, "--files"))
    except ValueError as error:
        raise PuzzleError(str(error)) from None


def _count(table: dict[str, int], key: str, amount: int = 1) -> None:
    table[key] = table.get(key, 0) + amount


def _check_settings(limit: int | None, min_dip: float, workers: int | None, per_game: int | None) -> None:
    if limit is not None and limit < 1:
        raise PuzzleError(f"invalid limit {limit!r}: expected at least 1")
    if per_game is not None and per_game < 1:
        raise PuzzleError(f"invalid --per-game {per_game!r}: expected at least 1")
    if min_dip < 0 or not math.isfinite(min_dip):
        raise PuzzleError(f"invalid min dip {min_dip!r}: expected pawns >= 0")
    if workers is not None and workers < 1:
        raise PuzzleError(f"invalid workers {workers!r}: expected at least 1")


def _passed(ordered: Sequence[Group], verdicts: Sequence[Verdict], report: PuzzleReport) -> list[Passed]:
    """The verified groups with the kind each is written as (a set or punish candidate whose
    verification found a defence is a defensive puzzle), the rest counted in `report` by reason."""
    passed: list[Passed] = []
    for ((candidate_kind, key), members), result in zip(ordered, verdicts, strict=False):
        if isinstance(result, EngineFailed):
            _count(report.dropped[candidate_kind], "engine_failed")
            report.engine_failures.append(result.message)
            continue
        if isinstance(result, str):
            _count(report.dropped[candidate_kind], result)
            continue
        written: PuzzleKind = "defend" if result.outcome == "defence" else candidate_kind
        _count(report.verified, candidate_kind)
        _count(report.trimmed, candidate_kind, int(result.trimmed))
        _count(report.kinds, written)
        passed.append((written, key, members, result))
    return passed


@dataclass(frozen=True)
class PuzzleRequest:
    """Which puzzles to make and how to verify them (`generate_puzzles`).

    `kind` names the kinds asked for (`parse_kind`: punish and set by default; defend only when
    named). `standard` names the rules (`standards.STANDARDS`), or is a `Standard` of one's own;
    `nodes` and `margin` override its budget and margin. `min_dip` is in pawns (setter's view);
    `limit` caps the puzzles written (candidates are verified in order of the evidence that humans
    fall, `evidence_order`, and verification stops at the limit). `human_model` judges practical
    setting moves; the rating is `RATING_MODEL`'s, the model its knots were fitted on (None: no
    rating, set puzzles by the only-move rule alone). A collection keeps one puzzle per moment of a
    game and at most `per_game` puzzles of one game (None: any number; the lichess standard keeps
    one), the first in the evidence order (`Collector`)."""

    kind: str | Sequence[str] = "both"
    min_dip: float = 1.0
    limit: int | None = None
    formats: Sequence[str] = FORMATS
    engine: str = "stockfish"
    standard: str | Standard = "default"
    nodes: int | None = None
    margin: float | None = None
    title: str = "diffimax puzzles"
    human_model: str | None = "default"
    per_game: int | None = DEFAULT_PER_GAME


def generate_puzzles(
    data: str | Path,
    out: str | Path,
    request: PuzzleRequest = PuzzleRequest(),
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> PuzzleReport:
    """Verified puzzles from the dataset `data` as `request` asks, written to `out` as
    puzzles.csv / .pgn / .html (nothing is written, and `out` is not made, when no candidate
    passes). `workers` engines verify (see `run_verification`); the output is the same whatever
    their number. `progress` shows the work."""
    kind, min_dip, limit, formats = request.kind, request.min_dip, request.limit, request.formats
    engine, human_model, per_game = request.engine, request.human_model, request.per_game
    started = time.monotonic()
    shown = progress or Progress.quiet()
    _check_settings(limit, min_dip, workers, per_game)
    kinds = parse_kind(kind)
    chosen = parse_formats(formats)
    rules = standard_of(request.standard, margin=request.margin, nodes=request.nodes)
    if "defend" in kinds and not rules.defence:
        raise PuzzleError(
            f"the {rules.name} standard has no defensive puzzles (every solver move keeps +2): "
            "ask for --kind defend under the default standard"
        )
    engine_name = check_engine(engine)  # an unusable engine is one line before the dataset is read
    model = None  # the rating's (`RATING_MODEL`: its knots are that model's); human_model judges setting
    if human_model is not None:
        shown.say("loading the human-move model")
        model = load_move_model(RATING_MODEL)
    searched: list[CandidateKind] = []
    if "punish" in kinds or "defend" in kinds:
        searched.append("punish")
    if "set" in kinds:
        searched.append("set")
    shown.say(f"reading the candidates of {', '.join(searched)} puzzles")
    candidates, early, games = load_candidates(data, searched, round(min_dip * 100), rules)
    report = PuzzleReport(engine=engine_name, nodes=rules.nodes, margin=rules.margin, standard=rules.name, games=games)
    for name in searched:
        report.candidates[name] = sum(early[name].values())
        report.dropped[name] = dict(early[name])
        report.duplicates_merged[name] = report.verified[name] = report.trimmed[name] = 0
    ordered = merged_candidates(candidates, kinds, report)
    tasks = [verify_task(members, kinds) for _, members in ordered]
    how = Verification(engine, rules, human_model, per_game)
    shown.start("verified", "candidates", len(tasks), "0 puzzles")
    verdicts, report.discarded, report.workers = run_verification(tasks, how, limit, workers, shown)
    shown.finish_step()
    report.not_checked = len(ordered) - len(verdicts)
    report.puzzles = _puzzles(_passed(ordered, verdicts, report), rules, model, shown)
    if report.puzzles:
        _write(report, Path(out), chosen, request.title)
    report.seconds = time.monotonic() - started
    return report


def merged_candidates(
    candidates: Sequence[PuzzleCandidate], kinds: Sequence[PuzzleKind], report: PuzzleReport
) -> list[Group]:
    """The distinct candidates (repeats merged) in the evidence order, each group's representative
    (the smallest game id) first. Asked for the defensive kind alone, a punish candidate whose
    solver was not BEHIND_CP down before the opponent's move is dropped here (`not_behind`)."""
    groups: dict[tuple[CandidateKind, tuple[str, tuple[str, ...]]], list[PuzzleCandidate]] = {}
    for candidate in candidates:
        _count(report.candidates, candidate.kind)
        if candidate.kind == "punish" and "punish" not in kinds and (candidate.start_cp or 0) > BEHIND_CP:
            _count(report.dropped["punish"], "not_behind")
            continue
        groups.setdefault((candidate.kind, candidate.key()), []).append(candidate)
    for (candidate_kind, _), members in groups.items():
        _count(report.duplicates_merged, candidate_kind, len(members) - 1)
    ordered = sorted(groups.items(), key=lambda item: evidence_order(item[1], puzzle_id(item[0][1])))
    for _, members in ordered:
        members.sort(key=lambda c: (c.game.game_id, c.ply))  # the representative: the smallest game id
    return ordered


def _write(report: PuzzleReport, out: Path, chosen: Sequence[OutputFormat], title: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    writers: dict[OutputFormat, tuple[str, Callable[[Sequence[Puzzle]], str]]] = {
        "csv": ("puzzles.csv", render_csv),
        "pgn": ("puzzles.pgn", render_pgn),
        "html": ("puzzles.html", lambda puzzles: render_html(puzzles, title=title)),
    }
    for fmt in chosen:
        filename, render = writers[fmt]
        report.written[fmt] = write_atomic(out / filename, render(report.puzzles))


def verify_task(members: Sequence[PuzzleCandidate], kinds: Sequence[PuzzleKind]) -> VerifyTask:
    """What the verifier checks for one group of merged candidates (`merged_candidates`): the
    representative's position and moves, every game and moment it stands for, and its kind's rules."""
    first = members[0]
    games = tuple(sorted({c.game.game_id for c in members}))
    moments = tuple(sorted({(c.game.game_id, c.ply) for c in members}))
    setting = first.setting
    if setting is None:
        defending = "defend" in kinds
        start = first.start_cp if defending else None
        return VerifyTask(
            first.fen,
            first.moves,
            first.fixed,
            games,
            moments,
            defence_from=start,
            defence_only=defending and "punish" not in kinds,
        )
    practical = setting.dip is not None and setting.dip <= SAFETY_CP and setting.trap_chance >= PRACTICAL_FLOOR
    return VerifyTask(first.fen, first.moves, first.fixed, games, moments, setting.opponent_rating, practical)


def _puzzles(
    passed: Sequence[Passed],
    rules: Standard,
    model: object,
    shown: Progress,
) -> list[Puzzle]:
    """The written records: themes, the rating, the game's link and opening."""
    from pipeline.outputs.puzzles.rating import rate

    puzzles = []
    shown.start("rated", "puzzles", len(passed))
    for puzzle_kind, key, members, result in passed:
        shown.advance()
        first = members[0]
        rating, deviation = rate(model, first.fen, result.moves) if model is not None else (None, None)  # type: ignore[arg-type]
        puzzles.append(
            Puzzle(
                puzzle_id=puzzle_id(key),
                kind=puzzle_kind,
                fen=first.fen,
                moves=result.moves,
                themes=themes_for(puzzle_kind, result, first.fen, rules.name),
                game_url=safe_url(first.link),
                opening_tags=puzzle_opening_tags(first.fen, first.game.opening, first.game.start_fen),
                checks=result.checks,
                game_ids=tuple(sorted({c.game.game_id for c in members})),
                game=first.game,
                ply=first.ply,
                dip=first.dip,
                standard=rules.name,
                rating=rating,
                rating_deviation=deviation,
                set_rule=result.set_rule,
                practical=result.practical,
                practical_trap=first.practical_trap,
                outcome=result.outcome,
            )
        )
    shown.finish_step()
    return puzzles
