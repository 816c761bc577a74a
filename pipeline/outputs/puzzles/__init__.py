"""`diffimax puzzles` and `diffimax tag`: trap puzzles from a mined dataset, and Lichess's theme
vocabulary and a difficulty rating for any puzzle.

Two kinds, both written as Lichess puzzle rows (FEN is the position *before* the opponent's
move, `Moves[0]` is that move, then the solver's moves alternate with the forced replies):

- *punish*: a responder fell into a trap in a real game; the solver refutes it.
- *set*: the setter's trap-setting move, the trap reply, then its refutation.

The parts, one purpose each (lichess-puzzler keeps its generator and its tagger apart too):

| module | what |
|---|---|
| `records` | the records passed between the parts, the vocabularies, the errors |
| `standards` | the verification standards (`default`, `lichess`) |
| `candidates` | candidates from the dataset (SQL in `schemas/puzzles.sql`), the screen, the order |
| `rules` | judging a line, pure: the only-move rule, `check_candidate` (verify, extend, decide), `recheck` |
| `setting` | the practical rule for a set puzzle's setting move |
| `verify` | the engines: serially or on a Ray actor pool, verdicts in the serial order |
| `line`, `tactics`, `mates`, `themes` | the pure theme tagger, `cook(puzzle) -> tags` |
| `rating` | the difficulty rating from the human-move model |
| `openings` | Lichess's OpeningTags (the opening and the game's link come from the dataset) |
| `csv_out`, `pgn_out`, `book`, `words` | the renderers (and the words they share) |
| `generate` | `generate_puzzles`, the command's core |
| `tagging` | `tag_csv`, the `tag` command's core |
"""

from __future__ import annotations

from pipeline.outputs.puzzles.book import render_html
from pipeline.outputs.puzzles.csv_out import render_csv
from pipeline.outputs.puzzles.generate import (
    PuzzleRequest,
    generate_puzzles,
    parse_formats,
    parse_kind,
    puzzle_id,
    themes_for,
)
from pipeline.outputs.puzzles.line import LineError, PuzzleLine
from pipeline.outputs.puzzles.openings import opening_tags
from pipeline.outputs.puzzles.pgn_out import render_pgn
from pipeline.outputs.puzzles.records import (
    FORMATS,
    LICHESS_COLUMNS,
    Checked,
    GameInfo,
    MultiPvLine,
    PracticalCheck,
    Puzzle,
    PuzzleCandidate,
    PuzzleError,
    PuzzleReport,
    SolverCheck,
)
from pipeline.outputs.puzzles.rules import (
    Analyse,
    check_candidate,
    is_only_move,
    recheck,
    score_win_chances,
)
from pipeline.outputs.puzzles.standards import DEFAULT_NODES, STANDARDS, Standard, standard_of
from pipeline.outputs.puzzles.tagging import tag_csv
from pipeline.outputs.puzzles.themes import cook
from pipeline.outputs.puzzles.verify import BATCHES_PER_WORKER, VERIFY_BATCH, EngineVerifier

__all__ = [
    "BATCHES_PER_WORKER",
    "DEFAULT_NODES",
    "FORMATS",
    "LICHESS_COLUMNS",
    "STANDARDS",
    "VERIFY_BATCH",
    "Analyse",
    "Checked",
    "EngineVerifier",
    "GameInfo",
    "LineError",
    "MultiPvLine",
    "PracticalCheck",
    "Puzzle",
    "PuzzleCandidate",
    "PuzzleError",
    "PuzzleLine",
    "PuzzleReport",
    "PuzzleRequest",
    "SolverCheck",
    "Standard",
    "check_candidate",
    "cook",
    "generate_puzzles",
    "is_only_move",
    "opening_tags",
    "parse_formats",
    "parse_kind",
    "puzzle_id",
    "recheck",
    "render_csv",
    "render_html",
    "render_pgn",
    "score_win_chances",
    "standard_of",
    "tag_csv",
    "themes_for",
]
