"""A hostile corpus of 17 files, written by the test: `diffimax mine` reads every game of it,
counts each one once (games_read = written + filtered + error), loses no valid game, writes every
game it keeps exactly as python-chess reads it, and writes the same tables whatever the shard size.

The games are real (lichess_100, read in place) and the damage is ours: truncation, garbage,
encodings, illegal and ambiguous moves, broken comments, variants, bad FEN tags, empty and huge
inputs, broken compression.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import re
from pathlib import Path

import chess.pgn
import zstandard

from pipeline.ingest.headers import GameFilter
from search.judges import JudgeSettings
from tests.conftest import GAMES
from tests.mining_helpers import SERVED, assert_counts_add_up, mine, rows

QUICK = {"engine": "material", "judges": JudgeSettings(judges=frozenset({"trappy"})), "workers": 2}


def real_games(count: int) -> list[bytes]:
    data = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [match.start() for match in re.finditer(rb"(?m)^\[Event ", data)]
    return [data[a:b] for a, b in itertools.pairwise(starts)][:count]


def write_corpus(root: Path) -> dict[str, int]:
    """The 17 files; returns how many valid games each holds (those must all be written)."""
    games = real_games(40)
    valid: dict[str, int] = {}

    def put(name: str, data: bytes, good: int) -> None:
        (root / name).write_bytes(data)
        valid[name] = good

    put("valid.pgn", b"".join(games[0:5]), 5)
    put("truncated.pgn", games[5] + games[6][: len(games[6]) // 2], 1)
    put("garbage.pgn", games[7] + b"\x00\xff\xfe garbage \x01\x02\n\n" + games[8], 2)
    put("crlf_bom.pgn", b"\xef\xbb\xbf" + games[9].replace(b"\n", b"\r\n") + games[10].replace(b"\n", b"\r\n"), 2)
    put("latin1.pgn", games[11].replace(b'[White "', b'[White "J\xf6rg ', 1) + games[12], 2)
    put("illegal.pgn", b'[Event "x"]\n[GameId "illegal1"]\n\n1. e4 e5 2. Ke5 *\n\n' + games[14], 1)
    put("ambiguous.pgn", b'[Event "x"]\n[GameId "ambig001"]\n\n1. d4 d5 2. Nf3 Nf6 3. Nd2 *\n\n' + games[15], 1)
    put("nomoves.pgn", b'[Event "x"]\n[GameId "nomoves1"]\n\n*\n\n' + games[16], 1)
    put("comment.pgn", games[17] + b'[Event "x"]\n[GameId "comment1"]\n\n1. e4 { never closed e5 2. Nf3\n', 1)
    put("variant.pgn", b'[Event "x"]\n[Variant "Atomic"]\n[GameId "atomic01"]\n\n1. e4 e5 *\n\n' + games[18], 1)
    put(
        "badfen.pgn",
        b'[Event "x"]\n[FEN "8/8/8/8 w - - 0 1"]\n[SetUp "1"]\n[GameId "badfen01"]\n\n1. e4 *\n\n' + games[19],
        1,
    )
    put("empty.pgn", b"", 0)
    put("whitespace.pgn", b"\n\n  \r\n\t\n", 0)
    put("huge_header.pgn", games[20].replace(b'[Event "', b'[Event "' + b"E" * 1_000_000, 1) + games[21], 2)
    put("truncated.pgn.zst", zstandard.ZstdCompressor().compress(b"".join(games[22:30]))[:-200], 0)
    put("valid.pgn.gz", gzip.compress(b"".join(games[30:34])), 4)
    (root / "valid.pgn.bz2").write_bytes(bz2.compress(b"".join(games[34:38])))
    valid["valid.pgn.bz2"] = 4
    return valid


def source_bytes(source: str) -> bytes:
    data = Path(source).read_bytes()
    if source.endswith(".gz"):
        data = gzip.decompress(data)
    elif source.endswith(".bz2"):
        data = bz2.decompress(data)
    elif source.endswith(".zst"):
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    return data


def test_the_hostile_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    valid = write_corpus(corpus)
    assert len(list(corpus.iterdir())) == 17
    out = tmp_path / "run"
    manifest = mine([str(corpus)], out, game_filter=GameFilter(), **QUICK)
    assert_counts_add_up(manifest, out)
    data = rows(out)
    written = {}
    for game in data["games"]:
        written.setdefault(Path(game["source"]).name, []).append(game)
    for name, good in valid.items():
        assert len(written.get(name, [])) >= good, (name, written.get(name))
    assert manifest["games_filtered"] >= 1  # the Atomic game
    reasons = " | ".join(error["reason"] for error in data["errors"])
    for needle in ("illegal", "ambiguous", "no moves", "comment", "invalid FEN"):
        assert needle in reasons, (needle, reasons)
    # Every written game, read back from its source at its byte offset, is what python-chess reads.
    plies = {}
    for position in data["positions"]:
        plies.setdefault(position["game_id"], []).append((position["ply"], position["move_uci"]))
    for game in data["games"]:
        text = source_bytes(game["source"])[game["byte_offset"] :].decode("utf-8", "replace")
        parsed = chess.pgn.read_game(io.StringIO(text))
        assert parsed is not None and parsed.headers.get("GameId", game["game_id"]) in (game["game_id"], "?")
        moves = [move.uci() for move in parsed.mainline_moves()]
        assert [uci for _, uci in sorted(plies[game["game_id"]])] == moves, game["game_id"]
    # The same tables at another shard size.
    other = tmp_path / "small-shards"
    mine([str(corpus)], other, game_filter=GameFilter(), shard_bytes=2_000, shard_games=2, **QUICK)
    again = rows(other)
    for table in ("games", "positions", "responses", "errors"):
        # A game's shard and index follow the shard size; which repeats a worker's table served
        # (SERVED) follows the parts' arrival order.
        strip = ("shard_id", "game_index") if table in ("games", "errors") else SERVED
        left = [{k: v for k, v in row.items() if k not in strip} for row in data[table]]
        right = [{k: v for k, v in row.items() if k not in strip} for row in again[table]]
        assert sorted(map(repr, left)) == sorted(map(repr, right)), table
