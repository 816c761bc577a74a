"""`mine --evals`: Lichess's evaluation export, written by the tests in its exact format, converted
by the real loader, and read by a worker and a mining job on the real Stockfish in place of the
root searches it is deep enough for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipeline.engines.options import EngineOptions
from pipeline.evals.cache import EvalCache, cached_value, deep_enough, level_limits
from pipeline.evals.export import (
    EVALS_SCHEMA,
    CachedEval,
    CachedLine,
    EvalExportError,
    Rejected,
    convert,
    export_line,
    position_of,
)
from pipeline.mine.occurrences import game_occurrences
from pipeline.mine.work import AnalysisWorker, Judging
from schemas.dataset import to_signed64
from search.chessgame import zobrist
from search.judges import JudgeSettings
from tests.conftest import GAMES, STOCKFISH, needs_stockfish, one_error_line, run_cli

# The Italian game to move 6: its positions are the ones looked up.
GAME = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "c2c3", "g8f6", "d2d4", "e5d4")
JUDGING = Judging(judges=JudgeSettings(judges=frozenset({"trappy"})), primary="trappy")
# A cheap job: 20,000 nodes a line (a probe of 5,000, a deeper search of 40,000).
OPTIONS = EngineOptions(nodes=20_000)
START_EPD = chess.Board().epd()


def stockfish_export(boards: list[chess.Board], nodes: int, lines: int = 2) -> list[str]:
    """An export of `boards` as Lichess's cloud writes one: MultiPV `lines` searched by Stockfish at
    `nodes` a line, White's scores, knodes and depth as the engine reported them."""
    written = []
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
        engine.configure({"Threads": 1})
        for board in boards:
            infos = engine.analyse(board, chess.engine.Limit(nodes=nodes * lines), multipv=lines, game=object())
            pvs = []
            for info in infos:
                white = info["score"].white()
                score = {"mate": white.mate()} if white.is_mate() else {"cp": white.score()}
                pvs.append({**score, "line": " ".join(move.uci() for move in info["pv"])})
            knodes = max(1, infos[0].get("nodes", nodes * lines) // 1000)
            written.append(export_line(board.epd(), [{"pvs": pvs, "knodes": knodes, "depth": infos[0]["depth"]}]))
    return written


def test_the_loader_reads_the_export_format_and_records_every_bad_item(tmp_path: Path) -> None:
    italian = chess.Board()
    for move in GAME[:5]:
        italian.push_uci(move)
    good = export_line(
        START_EPD,
        [
            {
                "pvs": [{"cp": 18, "line": "e2e4 e7e5 g1f3"}, {"cp": 12, "line": "d2d4 d7d5"}],
                "knodes": 90_000,
                "depth": 40,
            },
            {"pvs": [{"cp": 20, "line": "e2e4"}], "knodes": 5, "depth": 12},
            {"pvs": [{"cp": 20, "line": "e7e5"}], "knodes": 5, "depth": 12},  # a black move for white: this eval only
        ],
    )
    mate = export_line(
        "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - -", [{"pvs": [{"mate": 1, "line": "a1a8"}], "knodes": 1, "depth": 5}]
    )
    lines = [
        good,
        "",
        mate,
        '{"fen": "not a fen", "evals": []}',
        "{not json",
        export_line(italian.epd(), [{"pvs": [{"cp": 1, "mate": 2, "line": "g8f6"}], "knodes": 1, "depth": 1}]),
        export_line(italian.epd(), [{"pvs": [{"cp": -30, "line": "g8f6 d2d3"}], "knodes": 10, "depth": 18}]),
    ]
    export = tmp_path / "lichess_db_eval.jsonl.zst"
    export.write_bytes(zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode()))
    report = convert(str(export), str(tmp_path / "evals.parquet"))
    assert (report.lines, report.positions, report.evals) == (6, 3, 4)
    assert dict(report.rejected) == {"illegal move": 1, "bad fen": 1, "not JSON": 1, "bad pv": 1}
    rejected = [json.loads(line) for line in Path(str(report.rejected_file)).read_text().splitlines()]
    assert [r["reason"] for r in rejected] == ["illegal move", "bad fen", "not JSON", "bad pv"]
    assert rejected[0]["where"].endswith("line 1, eval 3: illegal move: 'e7e5' at " + START_EPD)
    assert "line 5" in rejected[2]["where"]  # numbered as the file is, blank lines included
    table = pq.read_table(tmp_path / "evals.parquet")
    keys = table["key"].to_pylist()
    assert keys == sorted(keys)
    found = EvalCache(str(tmp_path / "evals.parquet")).lookup([to_signed64(zobrist(chess.Board())), 12345])
    start = found[to_signed64(zobrist(chess.Board()))]
    assert [e.knodes for e in start] == [90_000, 5]  # deepest first
    assert start[0].lines[1] == CachedLine(12, None, ("d2d4", "d7d5"))


def test_a_cut_export_keeps_what_was_read_and_counts_the_cut(tmp_path: Path) -> None:
    lines = [
        export_line(START_EPD, [{"pvs": [{"cp": cp, "line": "e2e4 e7e5"}], "knodes": cp, "depth": 20}])
        for cp in range(20_000)
    ]
    whole = zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode())
    (tmp_path / "cut.jsonl.zst").write_bytes(whole[: len(whole) // 2])  # several blocks, cut in one
    report = convert(str(tmp_path / "cut.jsonl.zst"), str(tmp_path / "cut.parquet"))
    assert 0 < report.evals < 20_000 and pq.read_table(tmp_path / "cut.parquet").num_rows == report.evals
    assert report.rejected["truncated"] == 1


def test_the_loaders_key_is_the_polyglot_key_of_the_position() -> None:
    boards = []
    with open(GAMES / "lichess_100.pgn", encoding="utf-8") as pgn:
        while (game := chess.pgn.read_game(pgn)) is not None:
            board = game.board()
            for move in game.mainline_moves():
                board.push(move)
                boards.append(board.copy(stack=False))
    # en passant squares with and without a pawn to take, rights whose rook has gone
    extra = [
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6",
        "rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3",
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3",
        "rnbqkbn1/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN1 w KQkq -",
        "4k3/8/8/8/8/8/8/4K2R b K -",
    ]
    boards += [chess.Board(f"{fen} 0 1") for fen in extra]
    assert len(boards) > 5000
    for board in boards:
        assert position_of(board.fen()).key == to_signed64(zobrist(board)), board.fen()
        assert position_of(board.epd()).key == to_signed64(zobrist(board)), board.epd()
    for bad in ("8/8/8/8/8/8/8/8 w - -", "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -", "x w - -"):
        with pytest.raises(Rejected):
            position_of(bad)


def test_a_cached_score_is_the_setters_value_as_the_engine_gives_it() -> None:
    after_e4 = chess.Board()
    after_e4.push_uci("e2e4")  # Black to move: White set it, White's +30 is the setter's +30
    assert cached_value(CachedLine(30, None, ("e7e5",)), chess.WHITE) == 30
    assert cached_value(CachedLine(30, None, ("e7e5",)), chess.BLACK) == -30
    # White mates in 1 (the side to move, White, is the setter's opponent here): one ply away
    mated = cached_value(CachedLine(None, 1, ("a1a8",)), chess.BLACK)
    assert mated < -90_000 and cached_value(CachedLine(None, -2, ("a1a8",)), chess.WHITE) < -90_000


def test_an_eval_stands_in_only_for_a_search_it_is_as_deep_as() -> None:
    levels = level_limits(EngineOptions(nodes=20_000, deeper_factor=2, probe_divisor=4))
    assert {level: limits.nodes for level, limits in levels.items()} == {
        "probe": 5_000,
        "deep": 20_000,
        "deeper": 40_000,
    }
    two_lines = (CachedLine(0, None, ("e2e4",)), CachedLine(0, None, ("d2d4",)))
    assert deep_enough(CachedEval(0, START_EPD, 20, 40, two_lines), levels["deep"])  # 20k nodes a line
    assert not deep_enough(CachedEval(0, START_EPD, 20, 39, two_lines), levels["deep"])
    assert deep_enough(CachedEval(0, START_EPD, 20, 39, two_lines), levels["probe"])
    by_depth = EngineOptions(depth=18, deeper_factor=2, probe_divisor=4)
    assert not deep_enough(CachedEval(0, START_EPD, 17, 10**9, two_lines), by_depth)
    assert deep_enough(CachedEval(0, START_EPD, 18, 1, two_lines), by_depth)


def test_a_lookup_reads_the_row_groups_whose_key_range_holds_a_key(tmp_path: Path) -> None:
    def evals(key: int, knodes: int) -> dict[str, object]:
        return {
            "key": key,
            "fen": START_EPD,
            "depth": 1,
            "knodes": knodes,
            "pvs": [{"cp": 1, "mate": None, "line": "e2e4"}],
        }

    rows = [evals(-7, 1), evals(2, 1), evals(2, 9), evals(2, 5), evals(3, 1), evals(5, 1), evals(8, 1)]
    pq.write_table(pa.Table.from_pylist(rows, schema=EVALS_SCHEMA), tmp_path / "c.parquet", row_group_size=2)
    cache = EvalCache(str(tmp_path / "c.parquet"))
    assert cache.groups_of([2]) == [0, 1]  # key 2 spans the first two groups
    assert cache.groups_of([4]) == [2]  # 3..5 may hold it: read, and not found
    assert cache.groups_of([-8, 6, 9]) == []  # below, between and above every range
    found = cache.lookup([2, 4, 5, -7])
    assert sorted(found) == [-7, 2, 5]
    assert [e.knodes for e in found[2]] == [9, 5, 1]  # deepest first
    pq.write_table(pa.Table.from_pylist(rows[::-1], schema=EVALS_SCHEMA), tmp_path / "u.parquet", row_group_size=2)
    with pytest.raises(EvalExportError, match="is not sorted by key: convert it with diffimax evals"):
        EvalCache(str(tmp_path / "u.parquet"))


def test_what_is_not_a_converted_export_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EvalExportError, match="no evaluation cache"):
        EvalCache(str(tmp_path / "missing.parquet"))
    pq.write_table(pa.table({"fen": [START_EPD]}), tmp_path / "other.parquet")
    with pytest.raises(EvalExportError, match=re.escape("is no converted export (missing key, depth, knodes, pvs)")):
        EvalCache(str(tmp_path / "other.parquet"))
    (tmp_path / "cut.parquet").write_bytes(b"PAR1 cut")
    with pytest.raises(EvalExportError, match="cannot read evaluation cache"):
        EvalCache(str(tmp_path / "cut.parquet"))


@pytest.mark.stockfish
@needs_stockfish
def test_a_worker_takes_the_root_searches_from_deep_enough_evals_and_searches_the_rest(tmp_path: Path) -> None:
    occurrences = list(game_occurrences("g", GAME, range(len(GAME))))
    boards = [occurrence.board() for occurrence in occurrences]
    export = tmp_path / "evals.jsonl"
    export.write_text("\n".join(stockfish_export(boards, 40_000)) + "\n")
    convert(str(export), str(tmp_path / "deep.parquet"))
    shallow = tmp_path / "shallow.jsonl"  # the same lines at a knode a line: too shallow for any level
    shallow.write_text(
        "".join(
            export_line(record["fen"], [{**record["evals"][0], "knodes": 2}]) + "\n"
            for record in map(json.loads, export.read_text().splitlines())
        )
    )
    convert(str(shallow), str(tmp_path / "shallow.parquet"))

    def run(evals: str | None) -> tuple[object, list[dict[str, object]]]:
        worker = AnalysisWorker("stockfish", OPTIONS, JUDGING, evals=evals)
        try:
            outcome = worker.analyse_part(occurrences)
        finally:
            worker.close()
        assert outcome.responses is not None and not outcome.failures
        return outcome, outcome.responses.to_pylist()

    searched, searched_rows = run(None)
    cached, cached_rows = run(str(tmp_path / "deep.parquet"))
    too_shallow, _ = run(str(tmp_path / "shallow.parquet"))
    assert (cached.evals_found, cached.evals_served) == (len(GAME), len(GAME))  # type: ignore[attr-defined]
    assert (too_shallow.evals_found, too_shallow.evals_served) == (len(GAME), 0)  # type: ignore[attr-defined]
    assert too_shallow.engine_calls == searched.engine_calls  # type: ignore[attr-defined]
    # every root search (a probe, and the full search where the probe was refined) came from the cache
    assert cached.engine_calls < searched.engine_calls - len(GAME)  # type: ignore[attr-defined]
    records = [json.loads(line) for line in export.read_text().splitlines()]
    for row, record, board in zip(cached_rows, records, boards, strict=True):
        best = min(
            record["evals"][0]["pvs"],
            key=lambda pv: cached_value(CachedLine(pv.get("cp"), pv.get("mate"), ()), not board.turn),
        )
        assert row["best_move"] == best["line"].split()[0]
        assert row["value"] == cached_value(CachedLine(best.get("cp"), best.get("mate"), ()), not board.turn)
    assert [row["ply"] for row in cached_rows] == [row["ply"] for row in searched_rows]


@pytest.mark.stockfish
@needs_stockfish
def test_mine_with_evals_counts_what_the_cache_served_and_resumes_only_with_the_same_cache(tmp_path: Path) -> None:
    games = str(GAMES / "lichess_100.pgn")
    first = chess.Board()
    boards = [first.copy()]
    for move in GAME[:3]:
        first.push_uci(move)
        boards.append(first.copy())
    export = tmp_path / "evals.jsonl"
    export.write_text("\n".join(stockfish_export(boards, 40_000, lines=1)) + "\n" + "{broken\n")
    converted = run_cli("evals", str(export), "--out", str(tmp_path / "evals.parquet"), check=True)
    assert f"4 evals of 4 positions written to {tmp_path / 'evals.parquet'}" in converted.stdout
    assert "rejected: 1 (1 not JSON)" in converted.stdout
    job = [
        "mine",
        games,
        "--engine",
        "stockfish",
        "--nodes",
        "20000",
        "--plies",
        "0-3",
        "--max-games",
        "6",
        "--workers",
        "1",
        "--judges",
        "trappy",
        "--human-model",
        "none",
        "--evals",
        str(tmp_path / "evals.parquet"),
    ]
    run_cli(*job, "--out", str(tmp_path / "out"), check=True)
    planned = run_cli(*job, "--plan", "--sample-games", "6", "--sample-positions", "4", check=True).stdout
    assert f"--evals {tmp_path / 'evals.parquet'} holds the job's positions" in planned
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["positions_analysed"] >= 4
    assert 1 <= manifest["evals_served"] == manifest["evals_found"] <= 4  # the openings the cache holds
    assert manifest["identity"]["evals"] and manifest["evals"] == str(tmp_path / "evals.parquet")
    export.write_text("\n".join(stockfish_export(boards[:2], 40_000, lines=1)) + "\n")
    run_cli("evals", str(export), "--out", str(tmp_path / "evals.parquet"), check=True)
    refused = run_cli(*job, "--out", str(tmp_path / "out"), "--resume")
    assert "--evals differs" in one_error_line(refused)
    native = run_cli(
        "mine", games, "--out", str(tmp_path / "n"), "--engine", "native", "--evals", str(tmp_path / "evals.parquet")
    )
    assert "--evals stands in for a UCI engine's searches" in one_error_line(native)
