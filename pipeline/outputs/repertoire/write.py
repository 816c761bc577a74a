"""Writing a grown repertoire: its nodes (Parquet), its chapters (PGN), its explorer (HTML) and a
summary (JSON), all from the same rows."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from pipeline.common.choices import parse_choices
from pipeline.common.files import write_atomic
from pipeline.outputs.repertoire.explorer import render_explorer
from pipeline.outputs.repertoire.pgn import main_lines, render_repertoire_pgn
from pipeline.repertoire.driver import GrowthStats
from pipeline.repertoire.evidence import PositionGames, read_position_games
from pipeline.repertoire.records import NODES_FILE, Labels, node_rows, write_nodes
from pipeline.repertoire.settings import RepertoireError
from pipeline.repertoire.tree import Growth
from schemas.dataset import to_signed64
from search.chessgame import zobrist

FORMATS: Final = ("parquet", "pgn", "html")
PGN_FILE = "repertoire.pgn"
HTML_FILE = "explorer.html"
SUMMARY_FILE = "summary.json"


@dataclass
class RepertoireReport:
    """What was written, and the headline figures."""

    out: str
    files: list[str] = field(default_factory=list)
    nodes: int = 0
    chapters: int = 0
    lines: int = 0
    recommended: str | None = None
    expected: float | None = None
    gain: float | None = None
    failures: int = 0
    stats: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        head = f"repertoire: {self.nodes} nodes, {self.lines} main lines ({self.chapters} chapters)"
        if self.recommended is not None and self.expected is not None and self.gain is not None:
            head += f"; first move {self.recommended}, expected {self.expected:.3f}, gain {self.gain:+.3f}"
        if self.failures:
            head += f"; {self.failures} node(s) failed (see {SUMMARY_FILE})"
        return head + "\nwritten: " + ", ".join(self.files)


def parse_repertoire_files(text: str) -> frozenset[str]:
    """`--files`: some of FORMATS, comma-separated, or all."""
    try:
        return frozenset(parse_choices(text, FORMATS, "--files"))
    except ValueError as error:
        raise RepertoireError(str(error)) from None


def observed_games(growth: Growth, data: str | None) -> PositionGames | None:
    """The dataset's games at the tree's positions (`--data`), or None."""
    if data is None:
        return None
    keys = {to_signed64(zobrist(growth.start.board(node.path))) for node in growth.nodes}
    return read_position_games(data, keys, growth.settings)


def write_repertoire(
    growth: Growth,
    stats: GrowthStats,
    labels: Labels,
    out: str | Path,
    *,
    data: str | None = None,
    formats: Collection[str] = FORMATS,
) -> RepertoireReport:
    """Write the repertoire's outputs into `out` (created if missing)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    rows = node_rows(growth, labels, observed_games(growth, data))
    start = growth.start.board()
    report = RepertoireReport(str(root), nodes=len(rows), failures=len(growth.failures))
    chosen, report.lines = main_lines(rows)
    report.chapters = len(chosen)
    first = next((r for r in rows if r["parent_id"] == 0 and r["recommended"]), None)
    if first is not None:
        report.recommended, report.expected, report.gain = first["move_san"], first["expected"], first["move_gain"]
    if "parquet" in formats:
        report.files.append(str(write_nodes(rows, root / NODES_FILE)))
    if "pgn" in formats:
        report.files.append(str(write_atomic(root / PGN_FILE, render_repertoire_pgn(rows, start))))
    if "html" in formats:
        report.files.append(str(write_atomic(root / HTML_FILE, render_explorer(rows, start))))
    report.stats = asdict(stats) | {"failures": [{"node": n, "reason": r} for n, r in growth.failures]}
    summary = {
        "settings": growth.settings.describe(),
        "start": asdict(growth.start),
        "labels": asdict(labels),
        "report": {k: v for k, v in asdict(report).items() if k != "stats"},
        "stats": report.stats,
    }
    report.files.append(str(write_atomic(root / SUMMARY_FILE, json.dumps(summary, indent=2, default=str) + "\n")))
    return report
