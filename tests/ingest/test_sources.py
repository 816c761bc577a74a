"""Inputs and shards: expansion errors, byte-range and stream shards that lose or double no game at
any boundary, stable ids, compressed files and URLs streamed from a loopback server.

The real games are read in place from the shared data; derived files (slices, compressed copies,
damaged copies) are written to tmp_path."""

from __future__ import annotations

import bz2
import gzip
import http.server
import itertools
import os
import re
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard

from pipeline.ingest import streams
from pipeline.ingest.games import read_games
from pipeline.ingest.outcomes import Failed, Selected
from pipeline.ingest.ranges import load_shard, read_range, shard_bytes_of
from pipeline.ingest.sources import (
    InputError,
    Shard,
    expand_inputs,
    iter_shards,
    shard_id_of,
)
from pipeline.ingest.split import split_games
from pipeline.mine.plan.count import count_games
from tests.conftest import GAMES
from tests.loopback import Behaviour, FirstMode, RangeMode, RangeServer

LICHESS_100 = GAMES / "lichess_100.pgn"
PLAYER_B = GAMES / "lichess_player_b_1089.pgn"
PLAYER_A = GAMES / "lichess_player_a_37221.pgn.zst"
EVAL_CLK = GAMES / "lichess_eval_clk_10024.pgn.zst"

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".pgn.gz": gzip.compress,
    ".pgn.bz2": bz2.compress,
    ".pgn.zst": zstandard.ZstdCompressor().compress,
}


@pytest.fixture(autouse=True)
def _need_data(data_dir: Path) -> None:
    """Every test here reads the shared games."""


def event_starts(data: bytes) -> list[int]:
    """The plain count: offsets of the lines that start with `[Event `."""
    return [match.start() for match in re.finditer(rb"(?m)^\[Event ", data)]


def decompressed(path: Path) -> bytes:
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as reader:
        return reader.read()


def first_games(data: bytes, count: int) -> bytes:
    """The first `count` games of `data`, cut at a game start."""
    starts = event_starts(data)
    return data[: starts[count]] if count < len(starts) else data


def game_offsets(shards: list[Shard]) -> list[int]:
    """Offsets in the source of every game the shards hold, in order."""
    offsets: list[int] = []
    for shard in shards:
        loaded = load_shard(shard)
        offsets.extend(loaded.offset + start for start, _ in split_games(loaded.data))
    return offsets


# --- inputs ---------------------------------------------------------------------------------


def test_expand_inputs_directory_glob_file_and_url(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "x.pgn.zst").write_bytes(b"")
    (tmp_path / "a" / "y.PGN").write_bytes(b"")
    (tmp_path / "a" / "notes.txt").write_text("not a game")
    found = expand_inputs([str(tmp_path / "a")])
    assert found == [str(nested / "x.pgn.zst"), str(tmp_path / "a" / "y.PGN")]
    assert expand_inputs([str(tmp_path / "a" / "**" / "*.zst")]) == [str(nested / "x.pgn.zst")]
    url = "https://database.lichess.org/standard/lichess_db_standard_rated_2013-01.pgn.zst"
    assert expand_inputs([str(LICHESS_100), url, str(LICHESS_100)]) == [str(LICHESS_100), url]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: str(d / "missing.pgn"), "no such file: '{d}/missing.pgn'"),
        (lambda d: str(d / "*.pgn.gz"), "no PGN files (.pgn.zst, .pgn.bz2, .pgn.gz, .pgn) match '{d}/*.pgn.gz'"),
        (lambda d: str(d), "no PGN files (.pgn.zst, .pgn.bz2, .pgn.gz, .pgn) under directory '{d}'"),
        (
            lambda d: str(d / "notes.txt"),
            "unsupported input '{d}/notes.txt': expected a name ending in .pgn.zst, .pgn.bz2, .pgn.gz, .pgn",
        ),
        (
            lambda d: "http://127.0.0.1/games.csv",
            "unsupported input 'http://127.0.0.1/games.csv': expected a name ending in .pgn.zst, .pgn.bz2, "
            ".pgn.gz, .pgn",
        ),
        (lambda d: "https://a[b/games.pgn", "unreadable input URL 'https://a[b/games.pgn': Invalid IPv6 URL"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path: Path, make: Callable[[Path], str], message: str) -> None:
    (tmp_path / "notes.txt").write_text("not a game")
    with pytest.raises(InputError) as raised:
        expand_inputs([make(tmp_path)])
    assert str(raised.value) == message.format(d=tmp_path)


def test_a_named_pipe_is_refused_in_one_line_before_it_is_read(tmp_path: Path) -> None:
    """Issue 29: a FIFO as input gave "0 games read" and exit 0 (the input's digest, which --resume
    checks, had consumed the stream before the games were read)."""
    fifo = tmp_path / "games.pgn"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"is not a regular file \(a named pipe\?\): a job reads each input more"):
        expand_inputs([str(fifo)])


def test_iter_shards_checks_every_input_before_the_first_shard(tmp_path: Path) -> None:
    shards = iter_shards([str(LICHESS_100), str(tmp_path / "gone.pgn")])
    with pytest.raises(InputError, match="no such file"):
        next(shards)


def test_empty_file_has_no_shard(tmp_path: Path) -> None:
    for suffix in (".pgn", *COMPRESSORS):
        path = tmp_path / f"empty{suffix}"
        path.write_bytes(COMPRESSORS[suffix](b"") if suffix in COMPRESSORS else b"")
        assert list(iter_shards([str(path)])) == []
        assert count_games(str(path)) == 0


# --- ids ---------------------------------------------------------------------------------------


def test_shard_ids_are_stable_and_name_the_source() -> None:
    first = [shard.shard_id for shard in iter_shards([str(PLAYER_B)], shard_bytes=100_000)]
    again = [shard.shard_id for shard in iter_shards([str(PLAYER_B)], shard_bytes=100_000)]
    assert first == again
    assert first[0] == shard_id_of(str(PLAYER_B), 0)
    assert re.fullmatch(r"lichess_player_b_1089-[0-9a-f]{8}-000000", first[0])
    assert first[-1].endswith(f"-{len(first) - 1:06d}")
    assert len(set(first)) == len(first)
    other = shard_id_of(str(LICHESS_100), 0)
    assert other.split("-")[1] != first[0].split("-")[1]


# --- byte-range shards -------------------------------------------------------------------------


@pytest.mark.parametrize("shard_bytes", [7, 64, 333, 1000, 4096, 10_007, 65_536, 1 << 30])
def test_range_shards_tile_the_file(shard_bytes: int) -> None:
    data = LICHESS_100.read_bytes()
    shards = list(iter_shards([str(LICHESS_100)], shard_bytes=shard_bytes))
    assert all(shard.kind == "range" and shard.data is None for shard in shards)
    assert [(s.start, s.end) for s in shards] == [
        (start, min(len(data), start + shard_bytes)) for start in range(0, len(data), shard_bytes)
    ]
    assert b"".join(shard_bytes_of(shard) for shard in shards) == data
    assert game_offsets(shards) == event_starts(data)
    assert len(game_offsets(shards)) == count_games(str(LICHESS_100)) == 100


def test_every_byte_is_a_safe_boundary(tmp_path: Path) -> None:
    """Cut a file of real games with comments in two at every byte position (inside headers,
    movetext, comments, at line starts): the two halves always hold every game exactly once."""
    data = first_games(decompressed(EVAL_CLK), 3)
    path = tmp_path / "three.pgn"
    path.write_bytes(data)
    for cut in range(len(data) + 1):
        left = read_range(str(path), 0, cut)
        right = read_range(str(path), cut, len(data))
        assert left.data + right.data == data, cut
        assert right.offset == left.offset + len(left.data) or not right.data


def test_tiny_range_shards(tmp_path: Path) -> None:
    data = first_games(LICHESS_100.read_bytes(), 4)
    path = tmp_path / "four.pgn"
    path.write_bytes(data)
    for shard_bytes in (1, 2, 3, 5):
        shards = list(iter_shards([str(path)], shard_bytes=shard_bytes))
        assert len(shards) == -(-len(data) // shard_bytes)
        assert b"".join(shard_bytes_of(shard) for shard in shards) == data
        assert game_offsets(shards) == event_starts(data)


def test_range_shards_keep_a_prefix_before_the_first_game(tmp_path: Path) -> None:
    data = b"\n\nnot a header\n" + first_games(LICHESS_100.read_bytes(), 3)
    path = tmp_path / "prefix.pgn"
    path.write_bytes(data)
    for shard_bytes in (1, 10, 100, 1 << 20):
        shards = list(iter_shards([str(path)], shard_bytes=shard_bytes))
        assert b"".join(shard_bytes_of(shard) for shard in shards) == data


@pytest.mark.parametrize("shard_bytes", [997, 1 << 20])  # a shard per game or two; few large ones
def test_games_read_through_range_shards_equal_one_pass(shard_bytes: int) -> None:
    whole = [
        o.game["game_id"]
        for o in read_games(next(iter_shards([str(PLAYER_B)], shard_bytes=1 << 30)))
        if isinstance(o, Selected)
    ]
    sharded = [
        outcome.game["game_id"]
        for shard in iter_shards([str(PLAYER_B)], shard_bytes=shard_bytes)
        for outcome in read_games(shard)
        if isinstance(outcome, Selected)
    ]
    assert sharded == whole
    assert len(whole) == 1085  # four of the 1,089 games have no moves


# --- stream shards -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
@pytest.mark.parametrize("shard_games", [1, 2, 3, 10, 1088, 1089, 5000])
def test_stream_shards_cut_every_n_games(tmp_path: Path, suffix: str, shard_games: int) -> None:
    data = PLAYER_B.read_bytes()
    path = tmp_path / f"player_b{suffix}"
    path.write_bytes(COMPRESSORS[suffix](data))
    shards = list(iter_shards([str(path)], shard_games=shard_games))
    assert all(shard.kind == "stream" and shard.stream_error is None for shard in shards)
    assert b"".join(shard.data or b"" for shard in shards) == data
    starts = event_starts(data)
    assert [shard.first_game for shard in shards] == list(range(0, len(starts), shard_games))
    assert [shard.start for shard in shards] == starts[::shard_games]
    assert all(len(event_starts(shard.data or b"")) == shard_games for shard in shards[:-1])
    assert shards[-1].end == len(data)
    assert game_offsets(shards) == starts
    assert count_games(str(path)) == 1089


def test_stream_shards_of_the_real_zst_files() -> None:
    for path, games in ((PLAYER_A, 37_221), (EVAL_CLK, 10_024)):
        data = decompressed(path)
        shards = list(iter_shards([str(path)], shard_games=2000))
        assert len(shards) == -(-games // 2000)
        assert b"".join(shard.data or b"" for shard in shards) == data
        assert count_games(str(path)) == len(event_starts(data)) == games


def test_multi_frame_zst(tmp_path: Path) -> None:
    data = LICHESS_100.read_bytes()
    compressor = zstandard.ZstdCompressor(level=1)
    path = tmp_path / "frames.pgn.zst"
    path.write_bytes(b"".join(compressor.compress(data[i : i + 5000]) for i in range(0, len(data), 5000)))
    shards = list(iter_shards([str(path)], shard_games=7))
    assert b"".join(shard.data or b"" for shard in shards) == data
    assert count_games(str(path)) == 100


TRUNCATED = {
    ".pgn.zst": "EOFError: zstd stream ended inside a frame (truncated)",
    ".pgn.gz": "EOFError: Compressed file ended before the end-of-stream marker was reached",
    ".pgn.bz2": "EOFError: Compressed file ended before the end-of-stream marker was reached",
}


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_truncated_compressed_file_keeps_what_was_read_and_says_why(tmp_path: Path, suffix: str) -> None:
    data = PLAYER_B.read_bytes()
    # Small zstd frames, gzip members and bz2 blocks, so that most games come before the cut.
    pieces = [data[i : i + 50_000] for i in range(0, len(data), 50_000)]
    if suffix == ".pgn.zst":
        packed = b"".join(zstandard.ZstdCompressor().compress(piece) for piece in pieces)
    elif suffix == ".pgn.gz":
        packed = b"".join(gzip.compress(piece) for piece in pieces)
    else:
        packed = bz2.compress(data, compresslevel=1)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(packed[: len(packed) * 3 // 4])
    shards = list(iter_shards([str(path)], shard_games=100))
    assert [shard.stream_error is not None for shard in shards] == [False] * (len(shards) - 1) + [True]
    held = b"".join(shard.data or b"" for shard in shards)
    assert data.startswith(held)
    outcomes = [outcome for shard in shards for outcome in read_games(shard)]
    last = outcomes[-1]
    assert isinstance(last, Failed)
    assert last.reason == f"source unreadable after byte {len(held)}: {TRUNCATED[suffix]}"
    assert sum(isinstance(outcome, Selected) for outcome in outcomes) > 500


# --- URLs ---------------------------------------------------------------------------------------


class _Server:
    """A loopback HTTP server of in-memory files; a path in `slow` sends its first `slow[path]`
    bytes, then waits (at most 10 s) for `release` before the rest."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.slow: dict[str, int] = {}
        self.claimed: dict[str, int] = {}  # a Content-Length that the body does not reach
        self.release = threading.Event()
        self.finished = threading.Event()
        files, slow, claimed, release, finished = self.files, self.slow, self.claimed, self.release, self.finished

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(claimed.get(self.path, len(body))))
                self.end_headers()
                split = slow.get(self.path, len(body))
                self.wfile.write(body[:split])
                self.wfile.flush()
                if split < len(body):
                    release.wait(10)
                    self.wfile.write(body[split:])
                finished.set()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.watchdog = threading.Timer(120, self.httpd.shutdown)  # never outlives a stuck test

    def start(self) -> None:
        self.thread.start()
        self.watchdog.start()

    def stop(self) -> None:
        self.release.set()
        self.watchdog.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.parametrize("suffix", [".pgn", *COMPRESSORS])
def test_url_shards_equal_the_file(server: _Server, suffix: str) -> None:
    data = PLAYER_B.read_bytes()
    server.files[f"/games/player_b{suffix}"] = COMPRESSORS[suffix](data) if suffix in COMPRESSORS else data
    url = f"{server.base}/games/player_b{suffix}"
    shards = list(iter_shards([url], shard_games=250))
    assert [shard.kind for shard in shards] == ["stream"] * 5
    assert b"".join(shard.data or b"" for shard in shards) == data
    assert shards[0].source == url
    assert re.fullmatch(r"player_b-[0-9a-f]{8}-000000", shards[0].shard_id)
    assert count_games(url) == 1089
    outcomes = [outcome for shard in shards for outcome in read_games(shard)]
    assert sum(isinstance(outcome, Selected) for outcome in outcomes) == 1085


@pytest.mark.parametrize(("suffix", "head"), [(".pgn", 200_000), (".pgn.zst", 1_000_000)])
def test_url_is_streamed_not_downloaded_first(server: _Server, suffix: str, head: int) -> None:
    """The first shards arrive while the server still holds back the rest of the file."""
    source = PLAYER_A if suffix == ".pgn.zst" else PLAYER_B
    body = source.read_bytes()
    server.files["/slow" + suffix] = body
    server.slow["/slow" + suffix] = head
    shards = iter_shards([f"{server.base}/slow{suffix}"], shard_games=20)
    first = next(shards)
    assert first.first_game == 0 and len(event_starts(first.data or b"")) == 20
    assert not server.finished.is_set()
    server.release.set()
    rest = list(shards)
    expected = decompressed(source) if suffix == ".pgn.zst" else body
    assert (first.data or b"") + b"".join(shard.data or b"" for shard in rest) == expected


def test_dropped_connection_keeps_what_was_read_and_says_why(server: _Server) -> None:
    data = PLAYER_B.read_bytes()
    cut = data[: len(data) // 2]
    server.files["/dropped.pgn"] = cut
    server.claimed["/dropped.pgn"] = len(data)
    shards = list(iter_shards([f"{server.base}/dropped.pgn"], shard_games=100))
    assert b"".join(shard.data or b"" for shard in shards) == cut
    # This server answers a Range request with the whole body (200): the break cannot be resumed.
    assert (shards[-1].stream_error or "").startswith("StreamBroken: IncompleteRead")
    assert (shards[-1].stream_error or "").endswith(
        "not resumed: the server answered a Range request with 200, not 206 (Partial Content)"
    )
    outcomes = [outcome for shard in shards for outcome in read_games(shard)]
    assert isinstance(outcomes[-1], Failed)
    assert outcomes[-1].reason.startswith(f"source unreadable after byte {len(cut)}: StreamBroken: IncompleteRead")


def test_missing_url_is_one_clear_error(server: _Server) -> None:
    url = f"{server.base}/nothing.pgn.zst"
    with pytest.raises(InputError) as raised:
        list(iter_shards([url]))
    assert str(raised.value) == f"cannot open {url!r}: HTTP 404 Not Found"


# -- issue 18, item 2: a game larger than the cap is an error row, and reading goes on -------------


def oversized_game(size: int, newline: bool) -> bytes:
    """One game of `size` bytes of movetext: moves, or (newline=False) one endless line."""
    body = b"e4 e5 " * (size // 6) if newline else b"x" * size
    return b'[Event "Bomb"]\n[Site "?"]\n\n1. ' + body + b"\n\n"


@pytest.mark.parametrize("where", ["middle", "end", "start"])
@pytest.mark.parametrize("newline", [True, False])
def test_a_game_above_the_cap_is_skipped_to_the_next_game_and_counted(
    tmp_path: Path, where: str, newline: bool
) -> None:
    games = [raw for _, raw in split_games(LICHESS_100.read_bytes())][:12]
    big = oversized_game(50_000, newline)
    before, after = {"middle": (games[:5], games[5:]), "end": (games, []), "start": ([], games)}[where]
    path = tmp_path / "bomb.pgn.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(before) + big + b"".join(after)))
    shards = list(iter_shards([str(path)], shard_games=4, max_game_bytes=4_000))
    skipped = [shard for shard in shards if shard.skipped is not None]
    assert len(skipped) == 1 and "cap" in (skipped[0].skipped or "")
    # Every other byte is kept, in order, the offsets tile the stream, the games are numbered in order.
    assert b"".join(shard_bytes_of(shard) for shard in shards if shard.skipped is None) == b"".join(before + after)
    assert all(first.end == second.start for first, second in itertools.pairwise(shards))
    assert skipped[0].end - skipped[0].start == len(big) and skipped[0].first_game == len(before)
    outcomes = [outcome for shard in shards for outcome in read_games(shard)]
    failed = [outcome for outcome in outcomes if isinstance(outcome, Failed)]
    assert len(outcomes) == len(games) + 1 and [f.reason for f in failed if "cap" in f.reason] != []
    assert sum(isinstance(outcome, Selected) for outcome in outcomes) >= len(games) - 1


def test_the_cap_changes_no_shard_of_real_files() -> None:
    for path in (PLAYER_A, EVAL_CLK):
        capped = [(shard.shard_id, shard.start, shard.end) for shard in iter_shards([str(path)], shard_games=500)]
        shards = iter_shards([str(path)], shard_games=500, max_game_bytes=1 << 40)
        assert capped == [(shard.shard_id, shard.start, shard.end) for shard in shards]


# -- issue 18: a game above the cap in a plain .pgn (range shards) is an error row too ------------


def file_with_a_giant_game(tmp_path: Path, size: int, newline: bool, where: str = "middle") -> tuple[Path, bytes]:
    """12 real games with one game of `size` bytes of movetext among them (at the start, in the
    middle or at the end), as a plain .pgn; and the giant game's bytes."""
    games = [raw for _, raw in split_games(LICHESS_100.read_bytes())][:12]
    big = oversized_game(size, newline)
    before, after = {"middle": (games[:5], games[5:]), "end": (games, []), "start": ([], games)}[where]
    path = tmp_path / "giant.pgn"
    path.write_bytes(b"".join(before) + big + b"".join(after))
    return path, big


@pytest.mark.parametrize("where", ["middle", "end", "start"])
@pytest.mark.parametrize("shard_bytes", [1 << 40, 50_000, 7_919, 512])
def test_a_game_above_the_cap_in_a_plain_pgn_is_one_error_row_and_reading_goes_on(
    tmp_path: Path, where: str, shard_bytes: int
) -> None:
    """Before: range shards had no cap, and the shard that owned the game read it whole."""
    path, big = file_with_a_giant_game(tmp_path, 300_000, newline=True, where=where)
    data = path.read_bytes()
    giant_at = data.index(big)
    expected = [offset for offset, _ in split_games(data) if offset != giant_at]
    shards = list(iter_shards([str(path)], shard_bytes=shard_bytes, max_game_bytes=100_000))
    assert {shard.kind for shard in shards} == {"range"}
    outcomes = [outcome for shard in shards for outcome in read_games(shard)]
    failed = [outcome for outcome in outcomes if isinstance(outcome, Failed)]
    assert [(f.error["byte_offset"], f.reason) for f in failed if "cap" in f.reason] == [
        (
            giant_at,
            f"game larger than the 100,000-byte cap (--max-game-mb): {len(big):,} bytes skipped up to "
            + ("the end of the file" if where == "end" else "the next game start"),
        )
    ]
    read = [o.game["byte_offset"] if isinstance(o, Selected) else o.error["byte_offset"] for o in outcomes]
    assert sorted(offset for offset in read if offset != giant_at) == expected  # every other game, once
    assert read == sorted(read)  # in file order, the error row in its place
    assert len(outcomes) == len(expected) + 1
    assert sum(isinstance(outcome, Selected) for outcome in outcomes) >= len(expected) - 1
    for shard in shards:  # game_index counts the outcomes of the shard in order
        assert [
            o.game["game_index"] if isinstance(o, Selected) else o.error["game_index"] for o in read_games(shard)
        ] == list(range(len(list(read_games(shard)))))


def test_reading_a_range_over_a_giant_game_holds_about_one_cap(tmp_path: Path) -> None:
    """A 48 MiB game of one endless line in a plain .pgn, read with a 1 MiB cap: the reader's peak
    allocation stays a few MiB (before: the whole game, read into one buffer)."""
    games = [raw for _, raw in split_games(LICHESS_100.read_bytes())][:4]
    path = tmp_path / "endless.pgn"
    with path.open("wb") as handle:
        handle.write(b"".join(games[:2]) + b'[Event "Bomb"]\n[Site "?"]\n\n1. ')
        for _ in range(48):
            handle.write(b"x" * (1 << 20))
        handle.write(b"\n\n" + b"".join(games[2:]))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        loaded = read_range(str(path), 0, size, max_game_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loaded.data == b"".join(games)
    assert [(skip.at, skip.size) for skip in loaded.skipped] == [
        (len(b"".join(games[:2])), size - len(b"".join(games)))
    ]
    assert peak < 8 << 20, f"peak {peak / (1 << 20):.1f} MiB"
    # A range that starts inside the giant game owns the games after it, also read in bounded memory.
    tracemalloc.start()
    try:
        tail = read_range(str(path), 10 << 20, size, max_game_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tail.data == b"".join(games[2:]) and not tail.skipped
    assert peak < 8 << 20, f"peak {peak / (1 << 20):.1f} MiB"


# -- issue 18, item 3: a URL that stalls or drops is resumed with Range requests ------------------


@pytest.fixture
def quick_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resume tries without the real waits (1 s doubling to 16 s)."""
    monkeypatch.setattr(streams, "RESUME_DELAYS", (0.01,) * 5)


def player_b_zst() -> tuple[bytes, bytes]:
    """player_b as zstd (several frames, so a cut falls inside one), and its plain bytes."""
    data = PLAYER_B.read_bytes()
    compressor = zstandard.ZstdCompressor()
    third = len(data) // 3
    return b"".join(compressor.compress(data[i : i + third]) for i in range(0, len(data), third)), data


@pytest.mark.parametrize("first", ["drop", "stall"])
def test_a_url_that_drops_or_stalls_is_resumed_where_it_broke_off(quick_resumes: None, first: FirstMode) -> None:
    """On main the stream ended there with IncompleteRead or TimeoutError in `stream_error`."""
    body, data = player_b_zst()
    cut = len(body) // 2 + 12_345  # inside a zstd frame: the decoder never sees the break
    with RangeServer(Behaviour(body, first=first, cut=cut, hold=10)) as server:
        timeout = {"url_timeout": 0.5} if first == "stall" else {}  # a drop needs no timeout
        shards = list(iter_shards([f"{server.url}/b.pgn.zst"], shard_games=100, **timeout))
    assert [shard.stream_error for shard in shards if shard.stream_error] == []
    assert b"".join(shard.data or b"" for shard in shards) == data
    assert server.behaviour.requests == [(None, None), (f"bytes={cut}-", '"v1"')]


def test_a_url_that_drops_often_is_resumed_each_time_it_moves_on(quick_resumes: None) -> None:
    """The tries are counted from the last byte that arrived: 30 drops, each after progress, are fine."""
    data = PLAYER_B.read_bytes()
    with RangeServer(Behaviour(data, first="drop", cut=len(data) // 2)) as server:
        body = streams.HttpBody(f"{server.url}/b.pgn", delays=(0.01,))
        read = bytearray()
        while block := body.read1(len(data) // 30):
            read += block
            if len(read) < len(data) and body.resumes < 30:  # drop the connection under it, as a network would
                body.response.close()
        body.close()
    assert bytes(read) == data and body.resumes >= 30


@pytest.mark.parametrize(
    ("ranges", "accept", "why"),
    [
        ("ignore", "bytes", "not resumed: the server answered a Range request with 200, not 206 (Partial Content)"),
        (
            "etag",
            "bytes",
            """not resumed: the content changed since the download started (ETag was '"v1"', now '"v2"')""",
        ),
        ("wrong", "bytes", "not resumed: Content-Range 'bytes 5001-"),
        ("empty", None, "not resumed after 5 tries ()"),
        ("ok", "none", "not resumed: the server does not accept Range requests"),
    ],
)
def test_a_url_that_cannot_be_resumed_ends_its_stream_saying_why(
    quick_resumes: None, ranges: RangeMode, accept: str | None, why: str
) -> None:
    """Nothing of another content, or from another offset, is ever read on."""
    data = PLAYER_B.read_bytes()
    behaviour = Behaviour(data, first="drop", cut=5000, ranges=ranges, accept_ranges=accept)
    with RangeServer(behaviour) as server:
        shards = list(iter_shards([f"{server.url}/b.pgn"], shard_games=100))
    error = shards[-1].stream_error or ""
    assert error.startswith("StreamBroken: IncompleteRead") and " at byte 5,000 of the body; " in error, error
    assert why in error, error
    assert b"".join(shard.data or b"" for shard in shards) == data[:5000]  # nothing of another content
    tries = [asked for asked, _ in behaviour.requests[1:]]
    assert tries == ([] if accept == "none" else ["bytes=5000-"] * (5 if ranges == "empty" else 1))
