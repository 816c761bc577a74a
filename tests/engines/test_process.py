"""The engine process's protocol (`pipeline.engines.process.ShortPvProtocol`): python-chess reads
each info line with its PV cut to the first move, and the search plays back the whole PV of the
lines it returns. The answers must be python-chess's own, line for line, on the real Stockfish."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import chess
import chess.engine
import pytest

import pipeline.engines.process as process
from pipeline.engines.process import EngineProcess, ShortPvProtocol
from tests.conftest import STOCKFISH, needs_stockfish

pytestmark = needs_stockfish

POSITIONS = (
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",  # castling in the PVs
    "rnbqkb1r/pppp1ppp/8/4P3/6n1/8/PPPNPPPP/R1BQKBNR b KQkq - 1 4",
    "8/5P2/8/8/3k4/8/1K6/8 w - - 0 1",  # a promotion first
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # a mate in one: a mate score
)


class PlainProtocol(chess.engine.UciProtocol):
    """python-chess's own protocol, reading every PV whole: the reference."""

    def forget(self) -> None:
        pass


class PlainProcess(EngineProcess):
    async def _start(self, options: dict[str, int]) -> None:
        transport, protocol = await PlainProtocol.popen(self.path, setpgrp=True)
        self._handles.transport, self._handles.protocol = transport, protocol
        await protocol.initialize()
        await protocol.configure({name: value for name, value in options.items() if name in protocol.options})


def answers(engine: EngineProcess) -> Iterator[Any]:
    """Every search kind a judge asks: one line, several (MultiPV), every reply, one named reply."""
    for fen in POSITIONS:
        board = chess.Board(fen)
        legal = list(board.legal_moves)
        for lines, moves in ((1, None), (min(3, len(legal)), None), (len(legal), None), (1, legal[-1:])):
            found = engine.search(board, lines, chess.engine.Limit(nodes=20_000 * lines), moves, object(), 60)
            yield (
                fen,
                lines,
                found.nodes,
                [
                    (info.get("multipv"), info["score"], info["pv"], info.get("depth"), sorted(info))
                    for info in found.infos
                ],
            )


def test_searches_answer_as_python_chess_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    options = {"Threads": 1, "Hash": 16}
    short = EngineProcess(str(STOCKFISH), options, 60)
    try:
        assert isinstance(short.protocol, ShortPvProtocol)
        ours = list(answers(short))
    finally:
        short.close()
    monkeypatch.setattr(process, "full_pv", lambda protocol, board, info: dict(info))
    plain = PlainProcess(str(STOCKFISH), options, 60)
    try:
        theirs = list(answers(plain))
    finally:
        plain.close()
    assert ours == theirs
    assert any(len(pv) > 3 for *_, infos in ours for _, _, pv, _, _ in infos)  # whole PVs, not first moves


def test_a_line_split_across_reads_is_read_whole_and_its_pv_kept() -> None:
    """The pipe hands over bytes as they come: a line cut in two is held until its end arrives;
    python-chess then reads it with the PV's first move and a serial, and the PV is kept whole."""
    received: list[str] = []

    class Recording(ShortPvProtocol):
        def line_received(self, line: str) -> None:
            received.append(line)

    async def feed() -> Recording:
        protocol = Recording()
        line = b"info depth 12 multipv 1 score cp 31 nodes 20011 pv e2e4 e7e5 g1f3\n"
        protocol.pipe_data_received(1, line[:20])
        assert received == []
        protocol.pipe_data_received(1, line[20:] + b"info string no pv e2e4 here\nbestmove e2")
        return protocol

    protocol = asyncio.run(feed())
    assert received == [
        "info depth 12 multipv 1 score cp 31 nodes 20011 cpuload 1 pv e2e4",
        "info string no pv e2e4 here",
    ]
    assert protocol.pvs == {1: ("e2e4", "e7e5", "g1f3")} and bytes(protocol.unread) == b"bestmove e2"
