"""`diffimax tag`: our theme tagger and difficulty rating on any Lichess puzzle CSV, written back
beside Lichess's own columns (`DiffimaxThemes`, `DiffimaxRating`), so anyone can compare them."""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.common.files import check_write_target, write_atomic
from pipeline.common.progress import Progress
from pipeline.common.sanitize import clean_text, spreadsheet_safe
from pipeline.outputs.puzzles.line import LineError, PuzzleLine
from pipeline.outputs.puzzles.rating import rate
from pipeline.outputs.puzzles.records import PuzzleError
from pipeline.outputs.puzzles.themes import cook

ADDED_COLUMNS = ("DiffimaxThemes", "DiffimaxRating")
REQUIRED_COLUMNS = ("FEN", "Moves")


@dataclass
class TagReport:
    """What `tag_csv` did."""

    rows: int = 0
    tagged: int = 0
    errors: list[tuple[int, str, str]] = field(default_factory=list)
    """(line number, PuzzleId, reason) of every row that could not be tagged (kept, columns empty)."""
    written: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.tagged:,} of {self.rows:,} rows tagged"]
        if self.errors:
            lines.append(f"{len(self.errors):,} rows could not be tagged (kept with empty columns), e.g.:")
            lines += [f"  line {n} ({pid or '?'}): {reason}" for n, pid, reason in self.errors[:5]]
        lines += [f"wrote {path}" for path in self.written]
        return "\n".join(lines)


def tag_csv(
    source: str | Path, out: str | Path, *, human_model: str | None = "default", progress: Progress | None = None
) -> TagReport:
    """Every row of the Lichess puzzle CSV `source` written to `out` with DiffimaxThemes (`cook`)
    and DiffimaxRating (`rating.rate`, empty without a model). A row whose FEN or Moves cannot be
    replayed keeps its cells, with the two columns empty; it is counted, and listed with its
    reason in `OUT.errors.csv`. A file that is missing or lacks FEN/Moves is one PuzzleError.
    `progress` shows the rows tagged."""
    shown = progress or Progress.quiet()
    path = Path(source)
    for target in (Path(out), Path(out).with_name(Path(out).name + ".errors.csv")):
        check_write_target(target)  # before the work, not after it: the writes would refuse it anyway
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise PuzzleError(f"no puzzle CSV at {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PuzzleError(f"cannot read puzzle CSV {str(path)!r}: {error}") from None
    with field_limit(len(text) + 1):  # no cell limit below the file's size (csv's default: 131,072)
        return _tag_text(text, path, out, human_model, shown)


@contextlib.contextmanager
def field_limit(limit: int) -> Iterator[None]:
    """The csv module's field size limit (a process-wide setting) raised to `limit` for the block."""
    before = csv.field_size_limit()
    csv.field_size_limit(max(before, limit))
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _tag_text(text: str, path: Path, out: str | Path, human_model: str | None, shown: Progress) -> TagReport:
    reader = csv.DictReader(io.StringIO(text))
    columns = list(reader.fieldnames or [])
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise PuzzleError(f"{str(path)!r} is not a Lichess puzzle CSV: no {' or '.join(missing)} column")
    model = None
    if human_model is not None:
        from pipeline.human.models import load_move_model

        shown.say("loading the human-move model")
        model = load_move_model(human_model)
    report = TagReport()
    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow([*columns, *(c for c in ADDED_COLUMNS if c not in columns)])
    shown.start("tagged", "rows", text.count("\n") - 1 if text.endswith("\n") else text.count("\n"))
    for row in reader:
        report.rows += 1
        shown.advance()
        themes = rating = ""
        try:
            puzzle = PuzzleLine(row["FEN"] or "", tuple((row["Moves"] or "").split()))
            themes = " ".join(cook(puzzle))
            if model is not None:
                rating = str(rate(model, puzzle.fen, puzzle.moves)[0])
            report.tagged += 1
        except LineError as error:
            report.errors.append((reader.line_num, clean_text(row.get("PuzzleId")), str(error)))
        row["DiffimaxThemes"], row["DiffimaxRating"] = themes, rating
        # Every cell copied as it came, but a formula (`=cmd|x!A0`), as `query` and `puzzles` write them.
        writer.writerow(
            [
                spreadsheet_safe(row.get(name) or "", numbers=True)
                for name in [*columns, *(c for c in ADDED_COLUMNS if c not in columns)]
            ]
        )
    shown.finish_step()
    target = Path(out)
    report.written.append(write_atomic(target, stream.getvalue()))
    if report.errors:
        errors = io.StringIO()
        error_writer = csv.writer(errors, lineterminator="\n")
        error_writer.writerow(["line", "PuzzleId", "reason"])
        error_writer.writerows([n, spreadsheet_safe(pid), spreadsheet_safe(reason)] for n, pid, reason in report.errors)
        report.written.append(write_atomic(target.with_name(target.name + ".errors.csv"), errors.getvalue()))
    return report
