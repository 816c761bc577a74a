"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import chess
from hypothesis import strategies as st

from search.settings import DiffiMaxSettings
from search.tree import Tree

# Leaf utilities in centipawns: a narrow range makes ties and threshold hits common.
LEAF = st.integers(min_value=-400, max_value=400)


@st.composite
def trees(draw: st.DrawFn, max_depth: int = 4, max_branching: int = 4) -> Tree:
    """Random trees of varied depth and branching (leaves may sit at any level)."""
    depth = draw(st.integers(min_value=1, max_value=max_depth))

    def build(level: int) -> Tree:
        if level == depth or (level > 0 and draw(st.integers(0, 9)) == 0):
            return draw(LEAF)
        width = draw(st.integers(min_value=1, max_value=max_branching))
        return tuple(build(level + 1) for _ in range(width))

    return build(0)


@st.composite
def settings(draw: st.DrawFn, depth: int) -> DiffiMaxSettings:
    reasonable = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]))
    trap = draw(st.sampled_from([t for t in (0.0, 0.25, 0.5, 1.0, 2.0) if t <= reasonable]))
    return DiffiMaxSettings(
        depth=depth,
        scope=draw(st.sampled_from([2, 3, 4, 5, "all"])),
        reasonable_dip=reasonable,
        trap_dip=trap,
        safety_margin=draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, None])),
    )


# -- hostile PGN: headers, comments and annotations -------------------------------------------

KNOWN_TAGS = (
    "Event",
    "Site",
    "Date",
    "UTCDate",
    "UTCTime",
    "Round",
    "White",
    "Black",
    "Result",
    "WhiteElo",
    "BlackElo",
    "WhiteRatingDiff",
    "TimeControl",
    "GameId",
    "Link",
    "ECO",
    "Opening",
    "Termination",
    "Variant",
    "FEN",
    "SetUp",
    "TimeClass",
    "WhiteTitle",
)
HUGE = st.integers(min_value=-(2**80), max_value=2**80).map(str)
# The characters that break lines, quote or bracket in PGN and its readers, drawn often (plain
# st.text draws them rarely: a lone CR inside a FEN tag ended a job, found once in CI).
PGN_SPECIAL = '\r\n\t\x00\x0b\x0c\x1b\x7f\x85\u2028\u2029\ufeff"\\[]{}();%$!?#+=@ /-'
# Text a tag or comment may hold: any characters (quotes, brackets, braces, controls, surrogates
# excluded by the encoder), those of PGN_SPECIAL often, a real FEN with one of them after it, numbers
# far out of range, or what a real tag holds.
TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from(PGN_SPECIAL + "aKQRBNP18w"), max_size=24),
    st.builds(
        "{}{}{}".format,
        st.sampled_from(["8/8/8/8/8/8/8/8 w - - 0 1", chess.STARTING_FEN]),
        st.sampled_from(PGN_SPECIAL),
        st.sampled_from(["", "x", chess.STARTING_FEN]),
    ),
    HUGE,
    st.sampled_from(
        [
            "",
            "?",
            "-",
            "9999.99.99",
            "2023.02.30",
            "0000.00.00",
            "1500",
            "-1",
            "1e309",
            "nan",
            "180+2",
            "99999999999+0",
            "-0:00:01",
            "99:99:99",
            "1-0",
            "*",
            "Chess960",
            "Crazyhouse",
            "https://lichess.org/abcdefgh",
            "8/8/8/8/8/8/8/8 w - - 0 1",
            "x" * 300,
        ]
    ),
)
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
    if draw(st.integers(0, 3)) == 0:  # the tags a first position is built from, often
        tags.insert(0, ("FEN", draw(TEXT)))
        tags.insert(draw(st.integers(0, 1)), ("Variant", draw(st.sampled_from(["Chess960", "From Position", "?"]))))
    board = chess.Board()
    fen = dict(tags).get("FEN")
    if fen is not None:
        with contextlib.suppress(ValueError):  # a FEN the reader must refuse: moves from the start
            board = chess.Board(fen)
    header = "".join(f'[{name} "{value}"]\n' for name, value in tags)
    return header + "\n" + draw(movetext(board)) + "\n\n"


@st.composite
def hostile_pgn(draw: st.DrawFn, max_games: int) -> bytes:
    """One to `max_games` hostile games as the bytes of one input: UTF-8, Latin-1 (bytes that are
    not UTF-8) or UTF-8 after a byte-order mark."""
    text = "".join(draw(st.lists(games(), min_size=1, max_size=max_games)))
    encoding = draw(st.sampled_from(["utf-8", "latin-1-bytes", "bom"]))
    if encoding == "latin-1-bytes":
        return text.encode("latin-1", "replace")
    if encoding == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8", "replace")
    return text.encode("utf-8")


@contextlib.contextmanager
def drawn_from_the_seed_alone() -> Iterator[None]:
    """While open, what Hypothesis draws depends on the seed (and Hypothesis's version and these
    strategies) alone. Hypothesis also draws, now and then, the literal constants of the project's
    modules imported so far (not the tests'): the same seed gave other inputs when other tests had
    imported other modules (a whole run against one file's) or after an edit anywhere in pipeline/,
    so a seed's failure could not be replayed. Its own fixed constants stay."""
    from hypothesis.internal.conjecture import providers

    local = getattr(providers, "_get_local_constants", None)
    if local is None:  # an older Hypothesis, which draws no such constants
        yield
        return
    empty = providers.Constants()  # type: ignore[attr-defined]
    cache = providers.CONSTANTS_CACHE  # type: ignore[attr-defined]
    providers._get_local_constants = lambda: empty  # type: ignore[attr-defined]
    cache.cache.clear()  # the constants already picked out for each kind of draw
    try:
        yield
    finally:
        providers._get_local_constants = local  # type: ignore[attr-defined]
        cache.cache.clear()
