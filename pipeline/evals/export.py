"""Lichess's evaluation export (https://database.lichess.org/#evals), read and converted to Parquet.

The export is JSON lines, one position per line (about 330 M of them, zstd-compressed):

    {"fen": "<pieces> <turn> <castling> <en passant>",
     "evals": [{"pvs": [{"cp": 311, "line": "g2e4 f7f5 ..."}, {"mate": -3, "line": "..."}],
                "knodes": 206765, "depth": 36}, ...]}

A score is White's (`cp` in centipawns, or `mate` in moves, positive when White mates); `line`
starts with the move it scores; an eval's `knodes` count the whole (MultiPV) search. `convert`
writes one row per eval, keyed by the position's signed Polyglot key (what the mining workers look
positions up by) and sorted by it. A line or an eval that cannot be read is counted and recorded
with its reason (`<out>.rejected.jsonl`), and every valid eval is kept.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import chess
import chess.polyglot
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.files import MIB
from pipeline.common.storage import filesystem, is_object_url, parse_url, redact, storage_errors
from pipeline.dataset.sql import query
from pipeline.ingest.streams import ZstdStream
from schemas.dataset import to_signed64
from search.errors import DiffimaxError
from search.settings import is_whole

EVALS_SCHEMA = pa.schema(
    [
        ("key", pa.int64()),
        ("fen", pa.string()),
        ("depth", pa.int32()),
        ("knodes", pa.int64()),
        ("pvs", pa.list_(pa.struct([("cp", pa.int32()), ("mate", pa.int32()), ("line", pa.string())]))),
    ]
)
# Evals held in memory before they are written as one piece of the unsorted intermediate file.
BATCH_EVALS = 200_000
# Rows per row group of the converted file: a lookup reads every group whose key range holds a key
# looked up, about one a key. On 20 M synthetic rows, a part of 64 positions took 0.27 CPU-s at
# 20,000 rows a group and 8.8 s at 100,000; the footer grows as groups shrink (1 MB per 1,000
# groups: ~17 MB for the whole export, read once per worker). docs/results/mining.md.
ROW_GROUP_ROWS = 20_000
# Rejected items shown by `convert`'s report (all of them are in the rejected file).
SHOWN_REJECTS = 5
# Lines read between two progress reports.
PROGRESS_LINES = 10_000
# Centipawn scores beyond this are no engine's (Stockfish reports at most a few thousand).
CP_LIMIT = 100_000


class EvalExportError(DiffimaxError, ValueError):
    """An export that cannot be read at all, or a converted file that is not one."""


@dataclass(frozen=True)
class CachedLine:
    """One principal variation of a cached eval: its first move's score, White's view."""

    cp: int | None
    mate: int | None
    moves: tuple[str, ...]  # UCI, the scored move first


@dataclass(frozen=True)
class CachedEval:
    """One eval of a position: a search of `knodes` thousand nodes to `depth`, its lines best first."""

    key: int
    fen: str
    depth: int
    knodes: int
    lines: tuple[CachedLine, ...]


@dataclass
class ConvertReport:
    """What `convert` read and wrote."""

    out: str
    lines: int = 0
    positions: int = 0
    evals: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    """Rejected lines and evals, by reason."""
    examples: list[str] = field(default_factory=list)
    rejected_file: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "lines": self.lines,
            "positions": self.positions,
            "evals": self.evals,
            "rejected": sum(self.rejected.values()),
            "rejected_by_reason": dict(sorted(self.rejected.items())),
            "rejected_file": self.rejected_file,
        }


class Rejected(ValueError):
    """One item of the export that is not valid, with the reason (`reason`, for the counts)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}{': ' + detail if detail else ''}")
        self.reason = reason


# Polyglot's piece numbering (python-chess's `chess.polyglot.ZobristHasher`: black pawn 0, white
# pawn 1, ... white king 11).
PIECE_INDEX = {char: 2 * (index // 2) + (index % 2) for index, char in enumerate("pPnNbBrRqQkK")}
POLYGLOT = chess.polyglot.POLYGLOT_RANDOM_ARRAY
# Each castling right: the key's entry, and the king's and the rook's squares it needs (python-chess
# drops a right whose king or rook has moved, and so does the key).
CASTLING = {
    "K": (768, 4, "K", 7, "R"),
    "Q": (769, 4, "K", 0, "R"),
    "k": (770, 60, "k", 63, "r"),
    "q": (771, 60, "k", 56, "r"),
}
UCI_MOVE = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")


@dataclass(frozen=True)
class ExportPosition:
    """An export's position as the loader reads it: its FEN's four fields, its signed Polyglot
    key, and which side's piece stands on each occupied square."""

    epd: str
    key: int
    turn: str
    pieces: dict[int, str]


def position_of(fen: Any) -> ExportPosition:
    """The position of an export's FEN (four fields, or six), read as text: the key is Polyglot's,
    as `search.chessgame.zobrist` computes it from a board, at a hundredth of its cost (a board per
    line would take days over the whole export; `tests/mine/test_evals.py` holds the two equal)."""
    if not isinstance(fen, str) or not fen.strip():
        raise Rejected("no fen")
    fields = fen.split()
    if len(fields) not in (4, 6):
        raise Rejected("bad fen", f"{fen!r} has {len(fields)} fields, not 4 or 6")
    placement, turn, castling, ep = fields[:4]
    ranks = placement.split("/")
    key, pieces = 0, {}
    if len(ranks) != 8:
        raise Rejected("bad fen", f"{fen!r}: {len(ranks)} ranks")
    for row, text in enumerate(ranks):
        file = 0
        for char in text:
            if char in "12345678":
                file += int(char)
                continue
            index = PIECE_INDEX.get(char)
            if index is None or file > 7:
                raise Rejected("bad fen", f"{fen!r}: rank {8 - row} is {text!r}")
            square = 8 * (7 - row) + file
            pieces[square] = char
            key ^= POLYGLOT[64 * index + square]
            file += 1
        if file != 8:
            raise Rejected("bad fen", f"{fen!r}: rank {8 - row} is {text!r}")
    kings = [char for char in pieces.values() if char in "Kk"]
    if sorted(kings) != ["K", "k"]:
        raise Rejected("bad fen", f"{fen!r}: {len(kings)} kings")
    if turn not in ("w", "b"):
        raise Rejected("bad fen", f"{fen!r}: side to move {turn!r}")
    if castling != "-":
        if not castling or any(char not in CASTLING for char in castling) or len(set(castling)) != len(castling):
            raise Rejected("bad fen", f"{fen!r}: castling {castling!r}")
        for char in castling:
            entry, king_square, king, rook_square, rook = CASTLING[char]
            if pieces.get(king_square) == king and pieces.get(rook_square) == rook:
                key ^= POLYGLOT[entry]
    if ep != "-":
        if len(ep) != 2 or ep[0] not in "abcdefgh" or ep[1] != ("6" if turn == "w" else "3"):
            raise Rejected("bad fen", f"{fen!r}: en passant square {ep!r}")
        file = "abcdefgh".index(ep[0])
        beside = 8 * (4 if turn == "w" else 3)  # the rank of the pawns that could take
        pawn = "P" if turn == "w" else "p"
        if any(0 <= f <= 7 and pieces.get(beside + f) == pawn for f in (file - 1, file + 1)):
            key ^= POLYGLOT[772 + file]
    if turn == "w":
        key ^= POLYGLOT[780]
    return ExportPosition(" ".join(fields[:4]), to_signed64(key), turn, pieces)


def line_of(pv: Any, position: ExportPosition) -> CachedLine:
    """One pv, checked as far as the text allows: its first move names a square of the side to
    move (its legality is the board's to say: a worker serves only legal lines, `pipeline.evals.cache`)."""
    if not isinstance(pv, dict):
        raise Rejected("bad pv", "not an object")
    cp, mate, line = pv.get("cp"), pv.get("mate"), pv.get("line")
    if (cp is None) == (mate is None):
        raise Rejected("bad pv", "needs exactly one of cp and mate")
    if cp is not None and not (is_whole(cp, -CP_LIMIT) and cp <= CP_LIMIT):
        raise Rejected("bad pv", f"cp {cp!r} is no centipawn score")
    if mate is not None and not (is_whole(mate, -CP_LIMIT) and mate != 0 and mate <= CP_LIMIT):
        raise Rejected("bad pv", f"mate {mate!r} is no mate distance")
    moves = tuple(line.split()) if isinstance(line, str) else ()
    if not moves:
        raise Rejected("bad pv", "no line")
    first = moves[0]
    mover = (
        position.pieces.get("abcdefgh".find(first[0]) + 8 * (int(first[1]) - 1)) if UCI_MOVE.fullmatch(first) else None
    )
    if mover is None or mover.isupper() != (position.turn == "w"):
        raise Rejected("illegal move", f"{first!r} at {position.epd}")
    return CachedLine(cp, mate, moves)


def eval_of(item: Any, position: ExportPosition) -> CachedEval:
    if not isinstance(item, dict):
        raise Rejected("bad eval", "not an object")
    depth, knodes, pvs = item.get("depth"), item.get("knodes"), item.get("pvs")
    if not is_whole(depth, 0) or not is_whole(knodes, 0):
        raise Rejected("bad eval", f"depth {depth!r} and knodes {knodes!r} must be whole numbers >= 0")
    if not isinstance(pvs, list) or not pvs:
        raise Rejected("bad eval", "no pvs")
    lines = tuple(line_of(pv, position) for pv in pvs)
    if len({line.moves[0] for line in lines}) != len(lines):
        raise Rejected("bad eval", "two pvs start with the same move")
    return CachedEval(position.key, position.epd, depth, knodes, lines)


def parse_line(text: str, where: str) -> tuple[list[CachedEval], list[tuple[str, str]]]:
    """The valid evals of one export line, and each rejected eval's (reason, line) for the report.
    A line that names no position is one `Rejected`."""
    try:
        record = json.loads(text)
    except ValueError as error:
        raise Rejected("not JSON", str(error)) from None
    if not isinstance(record, dict):
        raise Rejected("not JSON", "not an object")
    position = position_of(record.get("fen"))
    evals = record.get("evals")
    if not isinstance(evals, list) or not evals:
        raise Rejected("no evals", str(record.get("fen")))
    found, rejected = [], []
    for index, item in enumerate(evals):
        try:
            found.append(eval_of(item, position))
        except Rejected as problem:
            rejected.append((problem.reason, f"{where}, eval {index + 1}: {problem}"))
    return found, rejected


@contextlib.contextmanager
def open_export(source: str) -> Iterator[io.TextIOBase]:
    """The export's text, from a local file or an s3:// / gs:// object, zstd-decompressed when its
    name ends in .zst."""
    with contextlib.ExitStack() as stack:
        raw: BinaryIO
        if is_object_url(source):
            url = parse_url(source)
            try:
                with storage_errors(url):
                    raw = stack.enter_context(filesystem(url.scheme).open(url.path, "rb"))
            except FileNotFoundError:
                raise EvalExportError(f"cannot open evaluation export {redact(source)!r}: no such object") from None
        else:
            try:
                raw = stack.enter_context(open(source, "rb"))
            except OSError as error:
                raise EvalExportError(f"cannot open evaluation export {source!r}: {error.strerror}") from None
        stream = cast(BinaryIO, ZstdStream(raw)) if source.lower().endswith(".zst") else raw
        yield io.TextIOWrapper(cast(Any, _Readable(stream)), encoding="utf-8", errors="replace", newline="")


class _Readable(io.RawIOBase):
    """A stream with `read` only (ZstdStream), as the raw stream `io.TextIOWrapper` buffers."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            self.pending = self.stream.read(MIB)
            if not self.pending:
                return 0
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


def _table(evals: list[CachedEval]) -> pa.Table:
    pvs = [[{"cp": line.cp, "mate": line.mate, "line": " ".join(line.moves)} for line in e.lines] for e in evals]
    columns = [[e.key for e in evals], [e.fen for e in evals], [e.depth for e in evals], [e.knodes for e in evals], pvs]
    return pa.Table.from_arrays(
        [pa.array(column, type=item.type) for column, item in zip(columns, EVALS_SCHEMA, strict=True)],
        schema=EVALS_SCHEMA,
    )


def convert(source: str, out: str, progress: Callable[[int], Any] | None = None) -> ConvertReport:
    """Convert the export `source` to the Parquet file `out` (local), sorted by key; each rejected
    line or eval is one JSON line of `<out>.rejected.jsonl` (reason, where), written only if any.
    `progress` is told the lines read every `PROGRESS_LINES`."""
    report = ConvertReport(out)
    target = Path(out)
    if target.is_dir():
        raise EvalExportError(f"cannot write {out!r}: it is a directory (name a .parquet file)")
    target.parent.mkdir(parents=True, exist_ok=True)
    rejected_path = target.with_name(target.name + ".rejected.jsonl")
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=target.parent, prefix=".evals-")))
        rejected_file: io.TextIOBase | None = None
        pieces: list[str] = []
        batch: list[CachedEval] = []

        def reject(reason: str, where: str) -> None:
            nonlocal rejected_file
            report.rejected[reason] += 1
            if len(report.examples) < SHOWN_REJECTS:
                report.examples.append(where)
            if rejected_file is None:
                rejected_file = cast(io.TextIOBase, stack.enter_context(open(rejected_path, "w", encoding="utf-8")))
            rejected_file.write(json.dumps({"reason": reason, "where": where}) + "\n")

        def flush() -> None:
            if batch:
                piece = scratch / f"{len(pieces):06d}.parquet"
                pq.write_table(_table(batch), piece)
                pieces.append(str(piece))
                batch.clear()

        text = stack.enter_context(open_export(source))
        shown = redact(source)  # once: a line's place names it 330 M times
        try:
            for number, line in enumerate(text, start=1):
                if not line.strip():
                    continue
                report.lines += 1
                if progress is not None and report.lines % PROGRESS_LINES == 0:
                    progress(report.lines)
                where = f"{shown} line {number}"
                try:
                    found, bad = parse_line(line, where)
                except Rejected as problem:
                    reject(problem.reason, f"{where}: {problem}")
                    continue
                for reason, detail in bad:
                    reject(reason, detail)
                if found:
                    report.positions += 1
                    report.evals += len(found)
                    batch.extend(found)
                    if len(batch) >= BATCH_EVALS:
                        flush()
        except EOFError as error:  # a cut .zst: what was read is kept, and the cut is one reject
            reject("truncated", f"{shown}: {error}")
        flush()
        if rejected_file is None and rejected_path.exists():
            rejected_path.unlink()  # an older run's rejects would read as this run's
        partial = target.with_name(f".{target.name}.partial")
        if pieces:
            with duckdb.connect() as connection:
                connection.execute(
                    query("evals", "sorted-evals").format(
                        scratch=_sql_string(str(scratch)),
                        pieces=_sql_list(pieces),
                        out=_sql_string(str(partial)),
                        rows=ROW_GROUP_ROWS,
                    )
                )
        else:
            pq.write_table(EVALS_SCHEMA.empty_table(), partial)
        os.replace(partial, target)
    report.rejected_file = str(rejected_path) if report.rejected else None
    return report


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_list(items: list[str]) -> str:
    return "[" + ", ".join(_sql_string(item) for item in items) + "]"


def convert_text(report: ConvertReport) -> str:
    """`diffimax evals convert`'s summary."""
    lines = [
        f"{report.evals:,} evals of {report.positions:,} positions written to {report.out}",
    ]
    rejected = sum(report.rejected.values())
    if rejected:
        reasons = ", ".join(f"{count:,} {reason}" for reason, count in sorted(report.rejected.items()))
        lines.append(f"rejected: {rejected:,} ({reasons}), each in {report.rejected_file}; for example:")
        lines.extend(f"  {example}" for example in report.examples)
    return "\n".join(lines)


def export_line(fen: str, evals: list[dict[str, Any]]) -> str:
    """One line of the export's format (for an export built from our own analyses)."""
    return json.dumps({"fen": fen, "evals": evals}, separators=(",", ":"))
