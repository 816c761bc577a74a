"""Issue 19: what board-pattern input (a small residual network over piece planes) buys the
human-move model, measured on the TUNE split only (held-out games are never read).

  python -m benchmarks.bench_planes [--lichess-rate 0.05] [--lichess-tune-rate 0.02] [--chesscom-tune-rate 1]
                                    [--blocks 6] [--filters 64] [--epochs 4] [--budget-minutes 40]
                                    [--model MODEL] [--cache /tmp/diffimax_planes]
                                    [--stage all|data|train|lgbm|report] [--out planes.json]

Needs PyTorch, which the project does not depend on (install it into the virtualenv for this
experiment only; the test suite never imports this module).

Stages, each cached in --cache (so a rerun is cheap; `train` and `lgbm` can run side by side
after `data`):

- data: the shared games through the project's reader (`pipeline.human.data.read_inputs`), their
  split (`GameRecord.split`) and the project's seeded position sample
  (`pipeline.human.examples.sampled_positions`: below a rate, forced moves left out, as training).
  Training: chess.com's training games whole, `--lichess-rate` of the Lichess training positions
  (with seed 0 and 0.05 these are the positions the bundled LightGBM model, issue 19's, was fitted
  on). Tune: `--chesscom-tune-rate` of chess.com's tune positions and `--lichess-tune-rate` of
  Lichess's, a subset of the positions the LightGBM model was early-stopped on (it sampled 1 and
  0.1 with the same seed). Every position is encoded from the mover's point of view (the board
  mirrored when Black moves): 12 piece planes, the en-passant square, the opponent's last move
  (from, to), and constant planes (castling rights, rating (r - 1500) / 500 and a missing flag,
  pool chess.com 0/1, clock / base, log clock, clock missing flag, ply, log base time).
- train: a residual CNN (`--blocks` x `--filters`, 3x3 convolutions, batch norm); the policy is
  a bilinear from-square x to-square score (64 x 64 cells, plus a learned bias per cell) masked to
  the legal moves, trained with the cross-entropy of the played move (an underpromotion shares the
  cell of the queen promotion). Adam, the learning rate multiplied by `--decay` after every epoch;
  the epoch with the lowest loss on the tune positions of game-half A (the half the product of
  experts is fitted on) is kept, training stops after two epochs without a new lowest or at
  `--budget-minutes` of training wall time. One torch thread by default: on this 2-core machine
  shared with other jobs, at nice 10, two threads ran a step 10-20 times slower than one
  (the threads wait on each other whenever one is descheduled).
- lgbm: the LightGBM model (`HumanMoveModel.load(--model)`, `move_probabilities(board,
  MoverContext(...))`, so its Stockfish depth-1 and book features) on the same tune positions,
  replayed from the same game records.
- report: top-1, top-3 and log-loss per pool and rating band (`pipeline.human.evaluate.band_of`),
  on all plies and under Maia's protocol (`pipeline.human.protocol`: from ply 10, mover clock
  >= 30 s where known), for (a) the network, (b) the LightGBM model, and (c) a product of experts
  p ~ p_lgbm^a * p_net^b with (a, b) fitted by log-loss on the tune games of half A (a hash of
  the game's split key) and reported on half B beside (a) and (b) on half B.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import numpy as np

from pipeline.common.splits import game_key
from pipeline.human.data import GameRecord, read_inputs
from pipeline.human.evaluate import band_of, band_order
from pipeline.human.examples import context_of, sampled_positions
from pipeline.human.model import DEFAULT_MODEL
from pipeline.human.protocol import MAIA_MIN_CLOCK, MAIA_MIN_PLY

GAMES = (
    "../shared/data/games/lichess_player_a_37221.pgn.zst",
    "../shared/data/games/lichess_eval_clk_10024.pgn.zst",
    "../shared/data/games/chesscom_mixed_1187.pgn",
)
CHESSCOM = "chesscom_mixed_1187.pgn"
# Seed of the split of the tune games into half A (fit, early stopping) and half B (report).
HALF_SEED = 4242
# Constant planes (per position scalars broadcast over the board).
SCALARS = (
    "castle_mover_k",
    "castle_mover_q",
    "castle_opponent_k",
    "castle_opponent_q",
    "rating",
    "rating_missing",
    "pool_chesscom",
    "clock_fraction",
    "log_clock",
    "clock_missing",
    "ply",
    "log_base",
)
# Share of a promotion cell given to each promotion piece (the network scores from x to cells).
PROMOTION_SHARE = {chess.QUEEN: 0.97, chess.KNIGHT: 0.02, chess.ROOK: 0.005, chess.BISHOP: 0.005}
EPS = 1e-9


# -- data ------------------------------------------------------------------------------------


def encode(
    board: chess.Board, record: GameRecord, rating: int | None, clock: float | None, ply: int
) -> tuple[list[int], list[float], tuple[int, int, int], list[int], list[int], list[str]]:
    """Mover's-view encoding: square codes (0 empty, 1-6 mover's pieces, 7-12 opponent's), the
    scalars, (en passant, last from, last to) squares (-1: none), the legal moves' cells and
    promotion pieces, and their UCI (in python-chess's generation order)."""
    turn = board.turn
    flip = 0 if turn == chess.WHITE else 56
    squares = [0] * 64
    for square, piece in board.piece_map().items():
        squares[square ^ flip] = piece.piece_type + (0 if piece.color == turn else 6)
    ep = board.ep_square ^ flip if board.ep_square is not None and board.has_legal_en_passant() else -1
    if board.move_stack:
        last = board.peek()
        last_from, last_to = last.from_square ^ flip, last.to_square ^ flip
    else:
        last_from = last_to = -1
    base = record.base_seconds
    scalars = [
        float(board.has_kingside_castling_rights(turn)),
        float(board.has_queenside_castling_rights(turn)),
        float(board.has_kingside_castling_rights(not turn)),
        float(board.has_queenside_castling_rights(not turn)),
        0.0 if rating is None else (rating - 1500) / 500,
        float(rating is None),
        float(record.pool == "chesscom"),
        0.0 if clock is None or not base else min(clock / base, 2.0),
        0.0 if clock is None else math.log1p(max(clock, 0.0)) / 5,
        float(clock is None),
        min(ply, 300) / 100,
        0.0 if not base else math.log1p(base) / 7,
    ]
    cells: list[int] = []
    promotions: list[int] = []
    ucis: list[str] = []
    for move in board.generate_legal_moves():
        cells.append((move.from_square ^ flip) * 64 + (move.to_square ^ flip))
        promotions.append(move.promotion or 0)
        ucis.append(move.uci())
    return squares, scalars, (ep, last_from, last_to), cells, promotions, ucis


class Builder:
    """Encoded positions of one part (train or tune) as growing lists, then arrays."""

    def __init__(self) -> None:
        self.squares: list[list[int]] = []
        self.scalars: list[list[float]] = []
        self.marks: list[tuple[int, int, int]] = []
        self.cells: list[int] = []
        self.promotions: list[int] = []
        self.sizes: list[int] = []
        self.labels: list[int] = []
        self.meta: list[tuple[str, str, int, int, float, int]] = []  # pool, game key, ply, rating, clock, half

    def add(self, board: chess.Board, record: GameRecord, position: Any, half: int) -> None:
        """One unforced position (`sampled_positions` leaves the forced ones out, as the project does)."""
        squares, scalars, marks, cells, promotions, ucis = encode(
            board, record, position.rating, position.clock_seconds, position.ply
        )
        self.squares.append(squares)
        self.scalars.append(scalars)
        self.marks.append(marks)
        self.cells.extend(cells)
        self.promotions.extend(promotions)
        self.sizes.append(len(cells))
        self.labels.append(ucis.index(position.move))
        self.meta.append(
            (
                record.pool or "unknown",
                game_key(record.source, record.game_id, record.byte_offset),
                position.ply,
                -1 if position.rating is None else position.rating,
                math.nan if position.clock_seconds is None else position.clock_seconds,
                half,
            )
        )

    def arrays(self) -> dict[str, Any]:
        return {
            "squares": np.asarray(self.squares, np.int8).reshape(-1, 64),
            "scalars": np.asarray(self.scalars, np.float32).reshape(-1, len(SCALARS)),
            "marks": np.asarray(self.marks, np.int8).reshape(-1, 3),
            "cells": np.asarray(self.cells, np.int16),
            "promotions": np.asarray(self.promotions, np.int8),
            "sizes": np.asarray(self.sizes, np.int64),
            "labels": np.asarray(self.labels, np.int64),
            "pools": np.asarray([m[0] for m in self.meta]),
            "games": np.asarray([m[1] for m in self.meta]),
            "plies": np.asarray([m[2] for m in self.meta], np.int64),
            "ratings": np.asarray([m[3] for m in self.meta], np.int64),
            "clocks": np.asarray([m[4] for m in self.meta], np.float64),
            "halves": np.asarray([m[5] for m in self.meta], np.int8),
        }


def half_of(key: str) -> int:
    digest = hashlib.blake2b(f"{HALF_SEED}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 2


def stage_data(args: argparse.Namespace, cache: Path) -> None:
    started = time.time()
    train, tune = Builder(), Builder()
    tune_records: list[GameRecord] = []
    games = {"train": 0, "tune": 0}
    for number, record in enumerate(read_inputs(list(GAMES))):
        if args.max_games and number >= args.max_games:
            break
        split = record.split
        if split == "held_out":
            continue  # never read further
        chesscom = record.source == CHESSCOM
        if split == "train":
            rate = 1.0 if chesscom else args.lichess_rate
        else:
            rate = args.chesscom_tune_rate if chesscom else args.lichess_tune_rate
        half = half_of(game_key(record.source, record.game_id, record.byte_offset)) if split == "tune" else -1
        target = train if split == "train" else tune
        kept = 0
        for position, board, _ in sampled_positions(record, args.seed, rate):
            target.add(board, record, position, half)
            kept += 1
        if kept:
            games[split] += 1
            if split == "tune":
                tune_records.append(record)
        if number % 5000 == 0:
            say(f"  {number} games read, {len(train.sizes)} train / {len(tune.sizes)} tune positions")
    for name, builder in (("train", train), ("tune", tune)):
        np.savez(cache / f"{name}.npz", **builder.arrays())
    (cache / "tune_records.pkl").write_bytes(pickle.dumps(tune_records))
    info = {
        "train_positions": len(train.sizes),
        "tune_positions": len(tune.sizes),
        "train_games": games["train"],
        "tune_games": games["tune"],
        "seconds": round(time.time() - started, 1),
        "train_chesscom": sum(1 for m in train.meta if m[0] == "chesscom"),
        "tune_chesscom": sum(1 for m in tune.meta if m[0] == "chesscom"),
    }
    (cache / "data.json").write_text(json.dumps(info))
    say(f"data: {info}")


# -- network ---------------------------------------------------------------------------------


def build_net(blocks: int, filters: int) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(c)
            self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(c)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(x + self.b2(self.c2(y)))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            planes = 12 + 3 + len(SCALARS)
            self.stem = nn.Sequential(nn.Conv2d(planes, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters))
            self.body = nn.Sequential(*[Block(filters) for _ in range(blocks)])
            self.head = nn.Conv2d(filters, 64, 1)  # 32 from-square and 32 to-square channels
            self.bias = nn.Parameter(torch.zeros(64 * 64))

        def forward(self, squares: torch.Tensor, marks: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
            batch = squares.shape[0]
            pieces = nn.functional.one_hot(squares.long(), 13)[:, :, 1:].float()  # (B, 64, 12)
            marked = nn.functional.one_hot(marks.long() + 1, 65)[:, :, 1:].float()  # (B, 3, 64)
            x = torch.cat(
                [pieces.transpose(1, 2), marked, scalars.unsqueeze(2).expand(batch, scalars.shape[1], 64)], dim=1
            ).reshape(batch, -1, 8, 8)
            x = self.body(torch.relu(self.stem(x)))
            head = self.head(x).reshape(batch, 64, 64)  # (B, channel, square)
            frm, to = head[:, :32], head[:, 32:]
            logits = torch.einsum("bcf,bct->bft", frm, to).reshape(batch, 4096) / math.sqrt(32)
            return logits + self.bias

    return Net()


def tensors(data: Any) -> dict[str, Any]:
    """Per-position arrays the network needs: square codes, marks, scalars, packed legal masks,
    the played cell."""
    sizes = data["sizes"]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cells = data["cells"].astype(np.int64)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    mask = np.zeros((len(sizes), 4096), np.uint8)
    mask[owner, cells] = 1
    played = cells[offsets[:-1] + data["labels"]]
    return {
        "squares": data["squares"],
        "marks": data["marks"],
        "scalars": data["scalars"],
        "mask": np.packbits(mask, axis=1),
        "played": played,
        "offsets": offsets,
        "cells": cells,
    }


def batch_logits(net: Any, part: dict[str, Any], index: np.ndarray) -> tuple[Any, Any]:
    import torch

    logits = net(
        torch.from_numpy(part["squares"][index]),
        torch.from_numpy(part["marks"][index]),
        torch.from_numpy(part["scalars"][index]),
    )
    mask = torch.from_numpy(np.unpackbits(part["mask"][index], axis=1).astype(bool))
    return logits.masked_fill(~mask, -1e9), torch.from_numpy(part["played"][index])


def cell_log_probs(net: Any, part: dict[str, Any], batch: int = 1024) -> np.ndarray:
    """log p(cell) of every position's legal cells, flat in the positions' move order."""
    import torch

    net.eval()
    out = np.zeros(len(part["cells"]), np.float64)
    n = len(part["played"])
    with torch.no_grad():
        for start in range(0, n, batch):
            index = np.arange(start, min(n, start + batch))
            logits, _ = batch_logits(net, part, index)
            logp = torch.log_softmax(logits, dim=1).numpy()
            lo, hi = part["offsets"][start], part["offsets"][index[-1] + 1]
            owner = np.repeat(index - start, np.diff(part["offsets"][index[0] : index[-1] + 2]))
            out[lo:hi] = logp[owner, part["cells"][lo:hi]]
    return out


def mean_loss(net: Any, part: dict[str, Any], chosen: np.ndarray, batch: int = 1024) -> float:
    import torch

    net.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(chosen), batch):
            logits, played = batch_logits(net, part, chosen[start : start + batch])
            total += float(torch.nn.functional.cross_entropy(logits, played, reduction="sum"))
    return total / len(chosen)


def stage_train(args: argparse.Namespace, cache: Path) -> None:
    import torch

    torch.set_num_threads(min(args.threads, 2))
    torch.manual_seed(args.seed)
    train = tensors(np.load(cache / "train.npz"))
    tune_data = np.load(cache / "tune.npz")
    tune = tensors(tune_data)
    stop_on = np.flatnonzero(tune_data["halves"] == 0)
    net = build_net(args.blocks, args.filters)
    parameters = sum(p.numel() for p in net.parameters())
    optimiser = torch.optim.Adam(net.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    n = len(train["played"])
    budget = args.budget_minutes * 60
    started = time.time()
    best = (math.inf, -1)
    history: list[dict[str, float]] = []
    say(f"train: {n} positions, net {args.blocks}x{args.filters} ({parameters} parameters)")
    say(f"  early stopping on {len(stop_on)} tune positions (half A)")
    stale = 0
    out_of_time = False
    for epoch in range(args.epochs):
        net.train()
        order = rng.permutation(n)
        epoch_start = time.time()
        seen = 0
        running = 0.0
        for step, start in enumerate(range(0, n, args.batch)):
            index = np.sort(order[start : start + args.batch])
            logits, played = batch_logits(net, train, index)
            loss = torch.nn.functional.cross_entropy(logits, played)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            seen += len(index)
            running += loss.item() * len(index)
            if step % 100 == 0:
                elapsed = time.time() - epoch_start
                say(f"  epoch {epoch + 1} step {step}: train loss {running / seen:.3f}, {elapsed:.0f} s")
            if time.time() - started > budget:
                out_of_time = True
                break
        epoch_seconds = time.time() - epoch_start
        stop_loss = mean_loss(net, tune, stop_on)
        history.append(
            {
                "epoch": epoch + 1,
                "positions": seen,
                "train_loss": running / max(seen, 1),
                "stop_loss": stop_loss,
                "seconds": round(epoch_seconds, 1),
                "lr": optimiser.param_groups[0]["lr"],
            }
        )
        say(f"epoch {epoch + 1}: {history[-1]}")
        if stop_loss < best[0]:
            best = (stop_loss, epoch + 1)
            torch.save(net.state_dict(), cache / "net.pt")
            stale = 0
        else:
            stale += 1
            if stale >= 2:
                break
        for group in optimiser.param_groups:
            group["lr"] *= args.decay
        if out_of_time:
            break
    seconds = time.time() - started
    net.load_state_dict(torch.load(cache / "net.pt"))
    np.save(cache / "net_cell_logp.npy", cell_log_probs(net, tune))
    info = {
        "blocks": args.blocks,
        "filters": args.filters,
        "parameters": parameters,
        "batch": args.batch,
        "lr": args.lr,
        "threads": torch.get_num_threads(),
        "train_positions": n,
        "best_epoch": best[1],
        "best_stop_loss": best[0],
        "seconds": round(seconds, 1),
        "out_of_time": out_of_time,
        "history": history,
    }
    (cache / "train.json").write_text(json.dumps(info))
    say(f"train: {info}")


# -- the LightGBM model on the same positions -------------------------------------------------


def stage_lgbm(args: argparse.Namespace, cache: Path) -> None:
    from pipeline.human.model import HumanMoveModel

    records: list[GameRecord] = pickle.loads((cache / "tune_records.pkl").read_bytes())
    tune = np.load(cache / "tune.npz")
    sizes = tune["sizes"]
    out = np.zeros(int(sizes.sum()), np.float64)
    model = HumanMoveModel.load(args.model)
    started = time.time()
    done = 0
    offset = 0
    try:
        for record in records:
            chesscom = record.source == CHESSCOM
            rate = args.chesscom_tune_rate if chesscom else args.lichess_tune_rate
            for position, board, moves in sampled_positions(record, args.seed, rate):
                legal = [move.uci() for move in moves]
                assert len(legal) == sizes[done], "tune positions out of step"
                p = model.move_probabilities(board, context_of(record, position))
                out[offset : offset + len(legal)] = [p[m] for m in legal]
                offset += len(legal)
                done += 1
                if done % 2000 == 0:
                    say(f"  lgbm: {done} of {len(sizes)} positions, {time.time() - started:.0f} s")
    finally:
        model.close()
    assert done == len(sizes)
    np.save(cache / "lgbm_p.npy", out)
    info = {"model": args.model, "positions": done, "seconds": round(time.time() - started, 1)}
    (cache / "lgbm.json").write_text(json.dumps(info))
    say(f"lgbm: {info}")


# -- report ----------------------------------------------------------------------------------


def net_move_log_probs(cell_logp: np.ndarray, promotions: np.ndarray) -> np.ndarray:
    """log p of every legal UCI move: its cell's, a promotion's share of the cell."""
    share = np.ones(len(promotions))
    for piece, value in PROMOTION_SHARE.items():
        share[promotions == piece] = value
    return cell_logp + np.log(share)


def renormalise(logp: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    starts = offsets[:-1]
    peak = np.maximum.reduceat(logp, starts)
    sizes = np.diff(offsets)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    total = np.log(np.add.reduceat(np.exp(logp - peak[owner]), starts)) + peak
    result: np.ndarray = logp - total[owner]
    return result


def outcomes(logp: np.ndarray, offsets: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per position: rank of the played move (ties by move order) and its log p."""
    n = len(labels)
    ranks = np.zeros(n, np.int64)
    played = np.zeros(n)
    for i in range(n):
        row = logp[offsets[i] : offsets[i + 1]]
        mine = row[labels[i]]
        ranks[i] = int(np.sum(row > mine) + np.sum(row[: labels[i]] == mine))
        played[i] = mine
    return {"rank": ranks, "logp": played}


def summary(found: dict[str, np.ndarray], chosen: np.ndarray) -> dict[str, float]:
    n = int(chosen.sum())
    if not n:
        return {"n": 0, "top1": math.nan, "top3": math.nan, "log_loss": math.nan}
    ranks, logp = found["rank"][chosen], found["logp"][chosen]
    return {
        "n": n,
        "top1": float(np.mean(ranks == 0)),
        "top3": float(np.mean(ranks < 3)),
        "log_loss": float(-np.mean(np.maximum(logp, math.log(EPS)))),
    }


def table(
    predictors: dict[str, dict[str, np.ndarray]], cells: Sequence[tuple[str, str, np.ndarray]]
) -> list[dict[str, Any]]:
    return [
        {"pool": pool, "band": band, **{name: summary(found, chosen) for name, found in predictors.items()}}
        for pool, band, chosen in cells
    ]


def pool_band_cells(pools: np.ndarray, bands: np.ndarray, keep: np.ndarray) -> list[tuple[str, str, np.ndarray]]:
    cells: list[tuple[str, str, np.ndarray]] = []
    for pool in sorted(set(pools[keep].tolist())):
        in_pool = keep & (pools == pool)
        for band in sorted(set(bands[in_pool].tolist()), key=band_order):
            cells.append((pool, band, in_pool & (bands == band)))
        cells.append((pool, "all", in_pool))
    cells.append(("all", "all", keep))
    return cells


def fit_product(lgbm: np.ndarray, net: np.ndarray, offsets: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) minimising the mean log-loss of p ~ p_lgbm^a p_net^b on the given positions."""
    from scipy.optimize import minimize

    played = offsets[:-1] + labels

    def loss(weights: np.ndarray) -> float:
        combined = renormalise(weights[0] * lgbm + weights[1] * net, offsets)
        return float(-np.mean(combined[played]))

    result = minimize(loss, np.array([1.0, 0.0]), method="Nelder-Mead", options={"xatol": 1e-3, "fatol": 1e-6})
    return float(result.x[0]), float(result.x[1])


def fit_temperature(lgbm: np.ndarray, offsets: np.ndarray, labels: np.ndarray) -> float:
    """The control: a alone in p ~ p_lgbm^a (what tempering the trees buys without the network)."""
    from scipy.optimize import minimize_scalar

    played = offsets[:-1] + labels
    result = minimize_scalar(
        lambda a: float(-np.mean(renormalise(a * lgbm, offsets)[played])), bounds=(0.2, 3.0), method="bounded"
    )
    return float(result.x)


def paired_gain(
    new: dict[str, np.ndarray], old: dict[str, np.ndarray], games: np.ndarray, chosen: np.ndarray, draws: int = 1000
) -> dict[str, float]:
    """new - old in top-1 and log-loss on the chosen positions, with a 95 % interval from a
    bootstrap over games (positions of one game move together)."""
    index = np.flatnonzero(chosen)
    _, owner = np.unique(games[index], return_inverse=True)
    top1 = (new["rank"][index] == 0).astype(float) - (old["rank"][index] == 0).astype(float)
    loss = -np.maximum(new["logp"][index], math.log(EPS)) + np.maximum(old["logp"][index], math.log(EPS))
    count = np.bincount(owner)
    sums = np.stack([np.bincount(owner, top1), np.bincount(owner, loss)])
    rng = np.random.default_rng(0)
    samples = []
    for _ in range(draws):
        weights = np.bincount(rng.integers(0, len(count), len(count)), minlength=len(count))
        samples.append(sums @ weights / (count @ weights))
    low, high = np.percentile(np.asarray(samples), [2.5, 97.5], axis=0)
    return {
        "n": len(index),
        "games": len(count),
        "top1": float(top1.mean()),
        "top1_low": float(low[0]),
        "top1_high": float(high[0]),
        "log_loss": float(loss.mean()),
        "log_loss_low": float(low[1]),
        "log_loss_high": float(high[1]),
    }


def subset(flat: np.ndarray, offsets: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The flat per-move values of the chosen positions, and their offsets."""
    index = np.flatnonzero(chosen)
    pieces = [flat[offsets[i] : offsets[i + 1]] for i in index]
    sizes = np.asarray([len(p) for p in pieces], np.int64)
    return np.concatenate(pieces), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def format_rows(rows: Sequence[dict[str, Any]], names: Sequence[str], min_n: int) -> str:
    header = ["pool", "band", "n", *(f"{name} top-1 / top-3 / LL" for name in names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        n = row[names[0]]["n"]
        if n < min_n and row["band"] != "all":
            continue
        cells = [row["pool"], row["band"], str(n)]
        for name in names:
            s = row[name]
            cells.append(f"{100 * s['top1']:.1f} / {100 * s['top3']:.1f} / {s['log_loss']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stage_report(args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    tune = np.load(cache / "tune.npz")
    sizes = tune["sizes"]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = tune["labels"]
    net = renormalise(net_move_log_probs(np.load(cache / "net_cell_logp.npy"), tune["promotions"]), offsets)
    lgbm = np.log(np.maximum(np.load(cache / "lgbm_p.npy"), EPS))
    lgbm = renormalise(lgbm, offsets)
    halves = tune["halves"]
    pools = tune["pools"]
    bands = np.asarray([band_of(None if r < 0 else int(r)) for r in tune["ratings"]])
    clocks = tune["clocks"]
    maia = (tune["plies"] >= MAIA_MIN_PLY) & (np.isnan(clocks) | (clocks >= MAIA_MIN_CLOCK))
    everything = np.ones(len(sizes), bool)

    fit_lgbm, fit_offsets = subset(lgbm, offsets, halves == 0)
    fit_net, _ = subset(net, offsets, halves == 0)
    a_lgbm, b_net = fit_product(fit_lgbm, fit_net, fit_offsets, labels[halves == 0])
    product = renormalise(a_lgbm * lgbm + b_net * net, offsets)
    temperature = fit_temperature(fit_lgbm, fit_offsets, labels[halves == 0])
    found = {
        "net": outcomes(net, offsets, labels),
        "lgbm": outcomes(lgbm, offsets, labels),
        "product": outcomes(product, offsets, labels),
        "lgbm_tempered": outcomes(renormalise(temperature * lgbm, offsets), offsets, labels),
    }
    both = {name: found[name] for name in ("net", "lgbm")}
    half_b = halves == 1
    report: dict[str, Any] = {
        "data": json.loads((cache / "data.json").read_text()),
        "train": json.loads((cache / "train.json").read_text()),
        "lgbm": json.loads((cache / "lgbm.json").read_text()),
        "product_weights": {"a_lgbm": a_lgbm, "b_net": b_net, "fitted_on_positions": int((halves == 0).sum())},
        "tempered_lgbm_a": temperature,
        "tables": {
            "maia_all_tune": table(both, pool_band_cells(pools, bands, maia)),
            "all_plies_all_tune": table(both, pool_band_cells(pools, bands, everything)),
            "maia_half_b": table(found, pool_band_cells(pools, bands, maia & half_b)),
            "all_plies_half_b": table(found, pool_band_cells(pools, bands, half_b)),
        },
    }
    titles = {
        "maia_all_tune": "Maia's protocol, every tune position: (a) net, (b) LightGBM",
        "all_plies_all_tune": "All plies, every tune position: (a) net, (b) LightGBM",
        "maia_half_b": f"Maia's protocol, tune half B: (c) product a={a_lgbm:.3f} (LightGBM) b={b_net:.3f} (net)",
        "all_plies_half_b": "All plies, tune half B",
    }
    for key, title in titles.items():
        names = ["net", "lgbm", "product"] if "half_b" in key else ["net", "lgbm"]
        print(f"\n{title}\n")
        print(format_rows(report["tables"][key], names, args.min_n))
    games = tune["games"]
    gains: dict[str, Any] = {}
    print(
        f"\nHalf B, product - LightGBM (and LightGBM tempered by a={temperature:.3f} alone - LightGBM), 95 % by games:"
    )
    for label, keep in (("maia", maia & half_b), ("all plies", half_b)):
        for pool in ("chesscom", "lichess", "all"):
            for band in ("<1200", "all"):
                chosen = keep & (pools == pool if pool != "all" else True) & (bands == band if band != "all" else True)
                if pool == "all" and band != "all":
                    continue
                gain = paired_gain(found["product"], found["lgbm"], games, chosen)
                control = paired_gain(found["lgbm_tempered"], found["lgbm"], games, chosen, draws=1)
                gains[f"{label} {pool} {band}"] = {"product": gain, "tempered": control}
                print(
                    f"  {label:9} {pool:8} {band:5} n={gain['n']:5}: top-1 {100 * gain['top1']:+.2f} "
                    f"[{100 * gain['top1_low']:+.2f}, {100 * gain['top1_high']:+.2f}] points, log-loss "
                    f"{gain['log_loss']:+.4f} [{gain['log_loss_low']:+.4f}, {gain['log_loss_high']:+.4f}]; "
                    f"tempered: {100 * control['top1']:+.2f}, {control['log_loss']:+.4f}"
                )
    report["gains_half_b"] = gains
    return report


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=["all", "data", "train", "lgbm", "report"], default="all")
    parser.add_argument("--cache", default="/tmp/diffimax_planes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lichess-rate", type=float, default=0.05)
    parser.add_argument("--lichess-tune-rate", type=float, default=0.02)
    parser.add_argument("--chesscom-tune-rate", type=float, default=1.0)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--filters", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--decay", type=float, default=0.5, help="the learning rate's factor after every epoch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (at most 2)")
    parser.add_argument("--budget-minutes", type=float, default=40.0)
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--min-n", type=int, default=200, help="bands with fewer positions are left out of the print")
    parser.add_argument("--max-games", type=int, default=0, help="read only the first N games (a smoke test)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if args.stage in ("all", "data") and not (args.stage == "all" and (cache / "data.json").exists()):
        stage_data(args, cache)
    if args.stage in ("all", "train") and not (args.stage == "all" and (cache / "train.json").exists()):
        stage_train(args, cache)
    if args.stage in ("all", "lgbm") and not (args.stage == "all" and (cache / "lgbm.json").exists()):
        stage_lgbm(args, cache)
    if args.stage in ("all", "report"):
        report = stage_report(args, cache)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
