"""Issue 29, item 7: hostile PGN headers, comments and annotations through a real mining job (the
material engine on a real local Ray cluster). Whatever a game holds, the job ends normally, and
every game read is written, filtered or an error row: `games_read = written + filtered + errors`.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.ingest.headers import GameFilter
from tests.mining_helpers import assert_counts_add_up, mine

pytestmark = pytest.mark.usefixtures("ray_session")

# Examples per run, each a whole job of up to GAMES games in one input (a job's start and end cost
# seconds on a loaded 2-core machine, its games little: many games to an example, few examples).
EXAMPLES = 6
GAMES = 40

KNOWN_TAGS = (
    "Event", "Site", "Date", "UTCDate", "UTCTime", "Round", "White", "Black", "Result", "WhiteElo", "BlackElo",
    "WhiteRatingDiff", "TimeControl", "GameId", "Link", "ECO", "Opening", "Termination", "Variant", "FEN", "SetUp",
    "TimeClass", "WhiteTitle",
)  # fmt: skip
HUGE = st.integers(min_value=-(2**80), max_value=2**80).map(str)
# Text a tag or comment may hold: any characters (quotes, brackets, braces, controls, surrogates
# excluded by the encoder), or numbers far out of range, or what a real tag holds.
TEXT = st.one_of(
    st.text(max_size=40),
    HUGE,
    st.sampled_from(["", "?", "-", "9999.99.99", "2023.02.30", "0000.00.00", "1500", "-1", "1e309", "nan",
                     "180+2", "99999999999+0", "-0:00:01", "99:99:99", "1-0", "*", "Chess960", "Crazyhouse",
                     "https://lichess.org/abcdefgh", "8/8/8/8/8/8/8/8 w - - 0 1", "x" * 300]),
)  # fmt: skip
EVAL = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    HUGE,
    HUGE.map(lambda text: "#" + text),
    st.sampled_from(["#", "#-0", "inf", "-inf", "0.3", "#2147483648", "30000000", "", "1,5"]),
)
CLOCK = st.one_of(
    st.tuples(HUGE, st.integers(0, 99), st.integers(0, 99)).map(lambda hms: f"{hms[0]}:{hms[1]:02d}:{hms[2]:02d}"),
    st.sampled_from(["0:03:00", "-0:00:01", "99:99:99", "99999999999:00:00", "::", "0:00:00.5", "abc", ""]),
)
ANNOTATION = st.one_of(
    st.builds("[%eval {}]".format, EVAL),
    st.builds("[%clk {}]".format, CLOCK),
    st.builds("[%{} {}]".format, st.from_regex(r"[a-z]{1,6}", fullmatch=True), TEXT),
    TEXT.map(lambda text: text.replace("}", "")),
)
NAG = st.one_of(
    st.integers(0, 2**40).map(lambda number: f"${number}"), st.sampled_from(["!", "?", "!!", "??", "!?", "?!"])
)
JUNK_MOVE = st.one_of(
    st.sampled_from(["Ke9", "O-O-O-O", "Qxh9", "e4e5", "P@e4", "--", "Z0", "exd6e.p.", "1.", "...", "(", ")"]),
    st.from_regex(r"[a-hKQRBNx1-8=+#]{1,6}", fullmatch=True),
)


@st.composite
def movetext(draw: st.DrawFn, board: chess.Board) -> str:
    """A random walk of legal moves with comments, annotations and, now and then, a token that is no
    legal move, a stray brace or a variation."""
    tokens: list[str] = []
    for _ in range(draw(st.integers(0, 16))):
        moves = list(board.legal_moves)
        if not moves:
            break
        if board.turn == chess.WHITE:
            tokens.append(f"{board.fullmove_number}.")
        if draw(st.integers(0, 19)) == 0:
            tokens.append(draw(JUNK_MOVE))
        move = draw(st.sampled_from(moves))
        tokens.append(board.san(move))
        board.push(move)
        if draw(st.booleans()):
            tokens.append(draw(NAG))
        if draw(st.booleans()):
            comment = " ".join(draw(st.lists(ANNOTATION, min_size=1, max_size=3)))
            tokens.append("{ " + comment + " }")
        if draw(st.integers(0, 29)) == 0:
            tokens.append(draw(st.sampled_from(["}", "{", "(", ")", "( 1. e4 )", "[", "]"])))
    tokens.append(draw(st.sampled_from(["1-0", "0-1", "1/2-1/2", "*", "", "2-0"])))
    return " ".join(tokens)


@st.composite
def games(draw: st.DrawFn) -> str:
    tags = draw(st.lists(st.tuples(st.sampled_from(KNOWN_TAGS), TEXT), max_size=8))
    tags += draw(st.lists(st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True), TEXT), max_size=2))
    board = chess.Board()
    fen = dict(tags).get("FEN")
    if fen is not None:
        with contextlib.suppress(ValueError):  # a FEN the reader must refuse: moves from the start
            board = chess.Board(fen)
    header = "".join(f'[{name} "{value}"]\n' for name, value in tags)
    return header + "\n" + draw(movetext(board)) + "\n\n"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(st.lists(games(), min_size=1, max_size=GAMES), st.sampled_from(["utf-8", "latin-1-bytes", "bom"]))
def test_hostile_headers_comments_and_annotations_never_end_a_job(texts: list[str], encoding: str) -> None:
    text = "".join(texts)
    data = text.encode("utf-8")
    if encoding == "latin-1-bytes":
        data = text.encode("latin-1", "replace")  # bytes that are not UTF-8
    elif encoding == "bom":
        data = b"\xef\xbb\xbf" + text.encode("utf-8", "replace")
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "fuzzed.pgn"
        source.write_bytes(data)
        out = Path(scratch) / "out"
        manifest = mine([str(source)], out, engine="material", workers=1, game_filter=GameFilter(ply_from=0, ply_to=6))
        assert (
            manifest["games_read"] == manifest["games_written"] + manifest["games_filtered"] + manifest["games_error"]
        )
        assert_counts_add_up(manifest, out)
