"""Reading the games of a shard: each game parsed, filtered on its headers and replayed into
positions, with one outcome per game, so that always

    games read = Selected + Filtered + Failed.

Bad input never stops a shard and never costs a valid game: a game that cannot be parsed or
replayed becomes a `Failed` with its reason and origin, and the games around it are unaffected.

The parts: `pipeline.ingest.split` cuts a shard's bytes into games, `pipeline.ingest.headers`
reads a game's headers and owns the header filters (`GameFilter`), `pipeline.ingest.movetext`
checks the movetext, reads clocks and evals and resolves move tokens, and
`pipeline.ingest.outcomes` holds what a game becomes (`Selected`, `Filtered`, `Failed`). This
module holds the reader (`GameReader`, `read_games`).

Each game is read by `chess.pgn.read_game` with a visitor (`_GameVisitor`): the header filters
decide in `end_headers` (SKIP: a filtered game is never replayed), python-chess replays the
mainline on its board, and every row comes from that board (`Board.fen`, `Board.san`, and the
project's one position key, `search.chessgame.zobrist` as `schemas.dataset.to_signed64`). What
python-chess's reader passes over in silence (a malformed tag line, a token that is not a move,
an unterminated comment or variation, a missing result marker) is checked first
(`parse_headers`, `check_movetext`), so that such a game fails with its reason.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import chess
import chess.pgn

from pipeline.common.splits import sample_value
from pipeline.ingest.headers import (
    CHESS960_NAMES,
    DroppedValue,
    FilterRule,
    GameFilter,
    TimeControlClass,
    date_dropped,
    decode_text,
    find_board,
    game_digest,
    game_id_of,
    is_rated,
    moves_digest,
    parse_date,
    parse_headers,
    parse_rating,
    parse_time_control,
    quote,
    rating_dropped,
    rating_rule,
    time_class,
    time_control_dropped,
)
from pipeline.ingest.movetext import Eval, MoveError, check_movetext, read_commands, resolve_token
from pipeline.ingest.openings import OPENING_PLIES, Opening, game_address, opening_table
from pipeline.ingest.outcomes import Failed, Filtered, GameOutcome, Selected
from pipeline.ingest.ranges import load_shard
from pipeline.ingest.rows import GameRow, PositionRow
from pipeline.ingest.sources import Shard
from pipeline.ingest.split import game_spans
from schemas.dataset import to_signed64
from search.chessgame import zobrist

# ---------------------------------------------------------------------------------------------
# Reading one game on python-chess's PGN reader


@dataclass(frozen=True, slots=True)
class _Where:
    source: str
    shard_id: str
    game_index: int
    byte_offset: int


class _HeaderValues(NamedTuple):
    """What the header filters read of a game that passes them, for its row."""

    time_control: str | None
    base_seconds: int | None
    increment_seconds: int | None
    speed: TimeControlClass
    white_elo: int | None
    black_elo: int | None


class _ReaderDisagreement(ValueError):
    """python-chess's reader found a different move token than `check_movetext` (never seen: a
    guard, so that a disagreement fails the game instead of writing wrong rows)."""


# What python-chess's reader is given of a game's movetext: escape lines (`%` in the first column)
# dropped, and blank lines too (python-chess's reader ends a game at a blank line).
_ESCAPE_LINE = re.compile(r"^%", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n\s*\n")


class _GameVisitor(chess.pgn.BaseVisitor[GameOutcome]):
    """One game on `chess.pgn.read_game`, which is given the movetext only (the headers were read by
    `parse_headers`: python-chess's reader skips a malformed tag line, which must fail the game).

    `end_headers` decides everything that needs no replay, in this order: a header line that
    cannot be read, variant, rated, time control, rating, sample, the movetext check, the ply
    window; it returns SKIP for a game it filters out or fails, so that such a game is never
    replayed. python-chess then sets up the first position from the Variant and FEN of the
    headers returned by `begin_headers` (the FEN checks come in the first `visit_board`) and reads
    the mainline: each move token is resolved by `resolve_token` in `parse_san`, a bad one goes to
    `handle_error`, variations are skipped, `visit_comment` reads %clk and %eval, `visit_move`
    collects the position rows."""

    def __init__(
        self, reader: GameReader, headers: dict[str, str], header_error: str | None, movetext: str, where: _Where
    ) -> None:
        self.reader = reader
        self.game_filter = reader.game_filter
        self.latin1 = False  # set by the reader: the headers were read as Windows-1252
        self.dropped: list[DroppedValue] = []
        self.tags = headers
        self.header_error = header_error
        self.movetext = movetext
        self.where = where
        self.game_id = game_id_of(headers, where.source, where.byte_offset)
        self.board_headers = chess.pgn.Headers({})  # what python-chess builds the first position from
        self.outcome: GameOutcome | None = None
        self.row: GameRow | None = None
        self.sans: list[str] = []
        self.by_name_960 = False
        self.standard = True
        self.board: chess.Board | None = None  # python-chess's board, from its first visit_board
        self.ply = 0  # moves read so far
        self.first = 0
        self.last = -1
        self.ucis: list[str] = []
        self.positions: list[PositionRow] = []
        self.clocks: dict[int, float] = {}  # ply after the move -> the mover's clock
        self.evals: dict[int, Eval] = {}
        self.opening: Opening | None = None  # the deepest position so far found in Lichess's openings table

    # -- outcomes -------------------------------------------------------------------------------

    def fail(self, reason: str, ply: int | None = None) -> None:
        where = self.where
        self.outcome = Failed(
            {
                "source": where.source,
                "shard_id": where.shard_id,
                "game_index": where.game_index,
                "byte_offset": where.byte_offset,
                "game_id": self.game_id,
                "ply": ply,
                "reason": reason,
            }
        )

    def filter_out(self, rule: FilterRule, reason: str) -> None:
        self.outcome = Filtered(self.game_id, rule, reason, self.where.game_index, self.where.byte_offset)

    def result(self) -> GameOutcome:
        if self.outcome is None:
            raise RuntimeError(f"game {self.game_id}: python-chess's reader ended without a decision")
        return self.outcome

    # -- headers --------------------------------------------------------------------------------

    def begin_headers(self) -> chess.pgn.Headers:
        # Filled in by `decide`: python-chess reads these headers only after `end_headers`.
        return self.board_headers

    def end_headers(self) -> chess.pgn.SkipType | None:
        self.decide()
        return chess.pgn.SKIP if self.outcome is not None else None

    def decide(self) -> None:
        """Set `outcome` if the game is filtered out or fails before its replay; else prepare it. In
        this order: a header line that cannot be read, the variant, the header filters, the
        movetext and the ply window."""
        if self.header_error is not None:
            return self.fail(self.header_error)
        variant = self.tags.get("Variant", "Standard").strip() or "Standard"
        board = self.board_of_variant(variant)
        if board is None:
            return None
        headers = self.pass_header_filters()
        if headers is None:
            return None
        sans = self.moves_in_window()
        if sans is None:
            return None
        board_class, chess960 = board
        self.prepare(variant, board_class, chess960, headers, sans)
        return None

    def board_of_variant(self, variant: str) -> tuple[type[chess.Board], bool] | None:
        """The board class of the Variant tag and whether it names Chess960; None (and the
        outcome set) when the game is not standard chess and the filter wants standard chess only,
        or when python-chess has no board for its variant."""
        standard_only = self.game_filter.standard_only
        lowered = variant.lower()
        chess960 = lowered in CHESS960_NAMES
        board_class: type[chess.Board] = chess.Board
        if not chess960:
            try:
                board_class = find_board(variant)
            except ValueError:
                if standard_only:
                    self.filter_out("variant", f"variant {variant}")
                    return None
                if not lowered.startswith("wild/"):
                    self.fail(f"unsupported variant {quote(variant)}")
                    return None
                chess960 = True  # FICS wild: a plain board from the FEN tag
        self.standard = board_class is chess.Board and not chess960
        if standard_only and not self.standard:
            self.filter_out("variant", f"variant {variant}")
            return None
        return board_class, chess960

    def pass_header_filters(self) -> _HeaderValues | None:
        """The time control and ratings of a game that passes the filters on rated, time control,
        rating and sample (in that order); None (and the outcome set) for a game left out."""
        game_filter = self.game_filter
        get = self.tags.get
        if game_filter.rated_only and not is_rated(self.tags):
            self.filter_out("rated", f"not rated (Event {quote(get('Event', ''))})")
            return None
        tc = get("TimeControl")
        base, increment, speed = self.reader.time_control(tc)
        speed = time_class(speed, get("TimeClass"))
        if game_filter.time_controls is not None and speed not in game_filter.time_controls:
            self.filter_out("time_control", f"time control {speed} ({tc or 'no TimeControl tag'})")
            return None
        white_elo = parse_rating(get("WhiteElo"))
        black_elo = parse_rating(get("BlackElo"))
        self.dropped += ["rating" for tag in ("WhiteElo", "BlackElo") if rating_dropped(get(tag))]
        if time_control_dropped(tc):
            self.dropped.append("time_control")
        rating_reason = rating_rule(game_filter, white_elo, black_elo)
        if rating_reason is not None:
            self.filter_out("rating", rating_reason)
            return None
        if game_filter.sample_rate < 1.0 and sample_value(game_filter.seed, self.game_id) >= game_filter.sample_rate:
            self.filter_out("sample", f"not in the {game_filter.sample_rate:g} sample (seed {game_filter.seed})")
            return None
        return _HeaderValues(tc, base, increment, speed, white_elo, black_elo)

    def moves_in_window(self) -> list[str] | None:
        """The mainline's move tokens, with the ply window set (`first`, `last`); None (and the
        outcome set) when the movetext is unreadable or no position falls in the window."""
        game_filter = self.game_filter
        sans = check_movetext(self.movetext)
        if isinstance(sans, tuple):
            self.fail(*sans)
            return None
        plies = len(sans)
        self.last = plies - 1 if game_filter.ply_to is None else min(plies - 1, game_filter.ply_to)
        self.first = game_filter.ply_from
        if self.first > self.last:
            self.filter_out(
                "ply_window", f"no position in plies {game_filter.ply_from}..{game_filter.ply_to} ({plies} plies)"
            )
            return None
        return sans

    def prepare(
        self, variant: str, board_class: type[chess.Board], chess960: bool, headers: _HeaderValues, sans: list[str]
    ) -> None:
        """Ready the replay: the headers python-chess sets the first position up from, and the
        game's row."""
        self.sans = sans
        get = self.tags.get
        date = get("UTCDate") or get("Date")
        if date_dropped(date):
            self.dropped.append("date")
        fen = get("FEN")
        start_fen = fen.strip() if fen and fen.strip() else None
        if start_fen is not None and ("\r" in start_fen or "\n" in start_fen):
            # A lone carriage return splits no header line, but python-chess refuses it in a tag.
            return self.fail(f"invalid FEN {quote(start_fen)}")
        self.by_name_960 = chess960
        if chess960:
            self.board_headers["Variant"] = "Chess960"
        elif board_class is not chess.Board:
            self.board_headers["Variant"] = board_class.aliases[0]
        if start_fen is not None:
            self.board_headers["FEN"] = start_fen
        self.row = {
            "game_id": self.game_id,
            "source": self.where.source,
            "shard_id": self.where.shard_id,
            "game_index": self.where.game_index,
            "byte_offset": self.where.byte_offset,
            "event": get("Event"),
            "site": get("Site"),
            "link": get("Link"),
            "date": parse_date(date),
            "white": get("White"),
            "black": get("Black"),
            "white_elo": headers.white_elo,
            "black_elo": headers.black_elo,
            "time_control": headers.time_control,
            "base_seconds": headers.base_seconds,
            "increment_seconds": headers.increment_seconds,
            "time_control_class": headers.speed,
            "result": get("Result"),
            "termination": get("Termination"),
            "opening": None,
            "eco": get("ECO"),
            "opening_header": get("Opening"),
            "url": game_address(get("Site"), get("Link")),
            "plies": len(sans),
            "variant": variant,
            "start_fen": start_fen,
            "digest": None,
            "moves_digest": None,
        }

    def visit_board(self, board: chess.Board) -> None:
        if self.board is not None or self.outcome is not None:
            return
        self.board = board  # the first position (python-chess then pushes every move on this board)
        start_fen = self.board_headers.get("FEN")
        if board.chess960 and not self.by_name_960:  # X-FEN castling rights in the FEN tag
            self.standard = False
            if self.game_filter.standard_only:
                return self.filter_out("variant", "Chess960 castling rights in the FEN tag")
        if self.standard and start_fen is not None and not board.is_valid():
            return self.fail(f"impossible start position {quote(start_fen)}")

    # -- the mainline ---------------------------------------------------------------------------

    def begin_variation(self) -> chess.pgn.SkipType:
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        # After a decision nothing is replayed, and nothing past the moves the movetext check kept.
        return chess.pgn.SKIP if self.outcome is not None or self.ply >= len(self.sans) else None

    def parse_san(self, board: chess.Board, san: str) -> chess.Move:
        token = self.sans[self.ply]
        move = resolve_token(board, token, self.ply, standard=self.standard)
        if san != token.rstrip("!?+#"):
            raise _ReaderDisagreement(f"python-chess reads {quote(san)} where the movetext has {quote(token)}")
        return move

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        ply = self.ply
        if 0 < ply <= OPENING_PLIES and self.standard and self.row is not None and self.row["start_fen"] is None:
            self.opening = opening_table().at(board) or self.opening  # the position after `ply` moves
        uci = board.uci(move)
        self.ucis.append(uci)
        if self.first <= ply <= self.last:
            assert self.row is not None
            turn = board.turn
            self.positions.append(
                {
                    "game_id": self.game_id,
                    "ply": ply,
                    "fen": board.fen(),
                    "position_key": to_signed64(zobrist(board)),
                    "side_to_move": "white" if turn else "black",
                    "move_uci": uci,
                    "move_san": board.san(move),
                    "mover_rating": self.row["white_elo"] if turn else self.row["black_elo"],
                    "clock_seconds": None,
                    "eval_cp": None,
                    "eval_mate": None,
                }
            )
        self.ply += 1

    def visit_comment(self, comment: str) -> None:
        if self.outcome is None and "[%" in comment:
            self.dropped += read_commands(self.clocks, self.evals, self.ply, comment)

    def handle_error(self, error: Exception) -> None:
        if self.outcome is not None:
            return
        if self.board is None:  # python-chess could not set up the first position
            start_fen = self.board_headers.get("FEN") or ""
            return self.fail(f"invalid FEN {quote(start_fen)}")
        if isinstance(error, MoveError):
            return self.fail(str(error), error.ply)
        if isinstance(error, _ReaderDisagreement):
            return self.fail(f"{error} at ply {self.ply}", self.ply)
        raise error  # not an error of the input: a bug, which must not pass as a failed game

    def end_game(self) -> None:
        if self.outcome is not None:
            return
        assert self.row is not None and self.board is not None
        if self.ply < len(self.sans):
            # python-chess's reader skipped the token it could not read: the old verdict on it.
            token = self.sans[self.ply]
            try:
                resolve_token(self.board, token, self.ply, standard=self.standard)
            except MoveError as error:
                return self.fail(str(error), error.ply)
            return self.fail(f"python-chess's reader skipped {quote(token)} at ply {self.ply}", self.ply)
        self.name_opening(self.row, self.board)
        clocks = self.clocks
        base_seconds = self.row["base_seconds"]
        base = float(base_seconds) if clocks and base_seconds is not None else None

        def clock_at(ply: int) -> float | None:
            """The clock of the side to move after `ply` moves: its own last %clk (its base time
            before its first move, in a game with clocks)."""
            return clocks.get(ply - 1) if ply >= 2 else base

        for position in self.positions:
            ply = position["ply"]
            position["clock_seconds"] = clock_at(ply)
            position["eval_cp"], position["eval_mate"] = self.evals.get(ply, (None, None))
        start_fen = self.row["start_fen"]
        self.row["digest"] = game_digest(self.tags, self.ucis)
        self.row["moves_digest"] = moves_digest(start_fen, self.ucis)
        self.outcome = Selected(
            self.row,
            self.positions,
            tuple(self.ucis),
            start_fen,
            self.board.chess960,
            tuple(self.dropped),
            self.latin1,
            final_clock_seconds=clock_at(self.ply),
        )

    def name_opening(self, row: GameRow, board: chess.Board) -> None:
        """The game's ECO code and Lichess opening name from its moves (the last position too), else
        from its headers (`pipeline.ingest.openings`); the header's own name stays in `opening_header`."""
        table = opening_table()
        if 0 < self.ply <= OPENING_PLIES and self.standard and row["start_fen"] is None:
            self.opening = table.at(board) or self.opening
        found = self.opening or table.of_headers(row["opening_header"], row["eco"])
        if found is not None:
            row["eco"], row["opening"] = found.eco, found.name


class GameReader:
    """Parses and replays games; owns its cache of time controls, nothing global. One per shard
    or per worker; not thread-safe."""

    def __init__(self, game_filter: GameFilter | None = None) -> None:
        self.game_filter = game_filter or GameFilter()
        self._time_controls: dict[str, tuple[int | None, int | None, TimeControlClass]] = {}

    def time_control(self, tc: str | None) -> tuple[int | None, int | None, TimeControlClass]:
        """`parse_time_control`, cached per tag value (a dump holds few distinct ones)."""
        timing = self._time_controls.get(tc or "")
        if timing is None:
            timing = self._time_controls[tc or ""] = parse_time_control(tc)
        return timing

    # -- the whole pipeline for one shard or buffer ---------------------------------------------

    def read_shard(self, shard: Shard) -> Iterator[GameOutcome]:
        """One outcome per game of the shard, in order. A stream that broke off ends with one more
        `Failed` that says why, so that the loss is counted. A worker may keep one reader for all
        its shards."""
        loaded = load_shard(shard)
        index = 0
        cut, shift = 0, 0  # where the games read so far end in `data`; bytes of the games skipped before
        for skipped in (*loaded.skipped, None):  # a range shard's games above the cap, cut out of `data`
            at = len(loaded.data) if skipped is None else skipped.at
            piece = loaded.data if (cut, at) == (0, len(loaded.data)) else loaded.data[cut:at]
            base_offset = loaded.offset + cut + shift
            for outcome in self.read(
                piece, source=shard.source, shard_id=shard.shard_id, base_offset=base_offset, first_index=index
            ):
                index += 1
                yield outcome
            if skipped is not None:
                yield Failed(
                    {
                        "source": shard.source,
                        "shard_id": shard.shard_id,
                        "game_index": index,
                        "byte_offset": skipped.offset,
                        "game_id": None,
                        "ply": None,
                        "reason": skipped.reason,
                    }
                )
                index += 1
                cut, shift = at, shift + skipped.size
        if shard.skipped is not None:  # one game too large to read: it counts, with its reason
            yield Failed(
                {
                    "source": shard.source,
                    "shard_id": shard.shard_id,
                    "game_index": index,
                    "byte_offset": shard.start,
                    "game_id": None,
                    "ply": None,
                    "reason": shard.skipped,
                }
            )
            index += 1
        if shard.stream_error is not None:
            yield Failed(
                {
                    "source": shard.source,
                    "shard_id": shard.shard_id,
                    "game_index": index,
                    "byte_offset": shard.end,
                    "game_id": None,
                    "ply": None,
                    "reason": f"source unreadable after byte {shard.end}: {shard.stream_error}",
                }
            )

    def read(
        self, data: bytes, *, source: str, shard_id: str, base_offset: int = 0, first_index: int = 0
    ) -> Iterator[GameOutcome]:
        """One outcome per game in `data` (whose first byte is at `base_offset` in the source)."""
        for index, (start, movetext, end) in enumerate(game_spans(data), first_index):
            yield self.read_game(
                data,
                start,
                movetext,
                end,
                source=source,
                shard_id=shard_id,
                game_index=index,
                byte_offset=base_offset + start,
            )

    def read_game(
        self,
        data: bytes,
        start: int,
        movetext_start: int,
        end: int,
        *,
        source: str,
        shard_id: str,
        game_index: int,
        byte_offset: int,
    ) -> GameOutcome:
        """The outcome of the game `data[start:end]`, whose movetext starts at `movetext_start`."""
        header_text, latin1 = decode_text(data[start:movetext_start])
        headers, header_error = parse_headers(header_text)
        text = data[movetext_start:end].decode("utf-8", "replace")  # SAN is ASCII; comments say nothing stored
        if "%" in text and _ESCAPE_LINE.search(text):
            text = "\n".join(line for line in text.split("\n") if not line.startswith("%"))
        visitor = _GameVisitor(self, headers, header_error, text, _Where(source, shard_id, game_index, byte_offset))
        visitor.latin1 = latin1
        mainline = text.strip()
        if "\n" in mainline:
            mainline = _BLANK_LINES.sub("\n", mainline)
        if chess.pgn.read_game(io.StringIO(mainline), Visitor=lambda: visitor) is None:
            visitor.decide()  # python-chess found no movetext line at all; the headers still decide
        return visitor.result()


def read_games(shard: Shard, game_filter: GameFilter | None = None) -> Iterator[GameOutcome]:
    """One outcome per game of the shard, in order (see `GameReader.read_shard`)."""
    return GameReader(game_filter).read_shard(shard)


def read_pgn_bytes(
    data: bytes, game_filter: GameFilter | None = None, *, source: str = "<bytes>", shard_id: str = "bytes"
) -> Iterator[GameOutcome]:
    """`read_games` over PGN bytes held in memory (tests, tools)."""
    yield from GameReader(game_filter).read(data, source=source, shard_id=shard_id)
