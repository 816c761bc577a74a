"""The UCI protocol loop of `diffimax play`: commands on stdin, answers on stdout.

The main thread reads commands; each `go` starts a worker thread that runs `Player.choose`, so
`isready`, `stop` and `quit` are answered at once while it works. The move is sent exactly once
per `go`, by whichever comes first: the worker finishing (unless `go infinite` / `go ponder`, which
wait for `stop`), `stop`, or the hard deadline of the time plan, when the best choice offered so
far is sent — and before any search finished, `instant_move`. Every `bestmove` is checked against
the position's legal moves; a position without one gets `bestmove (none)`.

Time management (`TimeSettings`, `plan_time`): a budget per move of the usable clock (the clock
less the move overhead) over the moves still to play (`movestogo`, else a fixed horizon) plus
most of the increment; the player starts no new stage after the budget, and the hard deadline
(a few budgets, never more than a share of the clock) sends the move whatever the player has.
Below the hurry threshold the player decides on the shallow pass alone.

Bad input never ends the loop: an unknown command or option, a bad value, an illegal move in
`position` or a bad `go` parameter each get one `info string error: ...` line naming what and where.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO

import chess

from pipeline.engines.backends import EMBEDDED, EngineOptions, open_backend
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.judging import MoveModel, load_model, model_path
from pipeline.play.player import STYLES, Choice, Control, Player, PlaySettings, Situation, instant_move, parse_style
from search.errors import DiffimaxError
from search.settings import SettingsError
from search.values import MATE, is_mate_score

ENGINE_NAME: Final = "diffimax play 0.1.0"
ENGINE_AUTHOR: Final = "the diffimax authors"
# Per-line node limit of play's engine searches: ~30-70 ms of Stockfish 15.1 on this machine,
# enough for a trap-style move in about a second of a 1+0 game.
DEFAULT_PLAY_NODES: Final = 20_000
# Seconds a closing player waits for a search's last engine call before closing the engine anyway.
CLOSE_WAIT: Final = 5.0
# Largest value of a spin option that has no natural bound.
SPIN_MAX: Final = 1_000_000_000


class OptionError(DiffimaxError, ValueError):
    """A `setoption` (or `--option`) naming no option, or a value the option does not take."""


# -- configuration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineSetup:
    """What the player runs on; a change re-opens the backend, the model or the corpus."""

    engine: str = "stockfish"
    """stockfish, native, material or a UCI engine's path."""
    nodes: int | None = DEFAULT_PLAY_NODES
    """Engine nodes per line (one move's search); None: the backend's default."""
    depth: int | None = None
    """Engine depth per line (UCI engines), None for none."""
    threads: int = 1
    """UCI Threads of the engine (1 keeps node-limited play reproducible)."""
    hash_mb: int = 16
    """UCI Hash of the engine, MiB."""
    shallow_depth: int = 4
    """The shallow pass: engine depth (UCI) or plies (native)."""
    human_model: str = "default"
    """The human-move model: a file, default (the bundled one) or none."""
    human_corpus: str | None = None
    """A mined dataset or corpus file of what humans played where, or None."""

    def __post_init__(self) -> None:
        for name, amount in (("threads", self.threads), ("hash", self.hash_mb), ("shallow depth", self.shallow_depth)):
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise SettingsError(f"invalid {name} {amount!r}: must be a whole number >= 1")

    def engine_options(self) -> EngineOptions:
        return EngineOptions(threads=self.threads, hash_mb=self.hash_mb, nodes=self.nodes, depth=self.depth,
                             shallow_depth=self.shallow_depth)  # fmt: skip


@dataclass(frozen=True)
class TimeSettings:
    """How the clock becomes a budget per move."""

    move_overhead_ms: int = 100
    """Kept back from every clock for what the GUI, the pipe and the OS take around our thinking."""
    horizon: int = 30
    """Moves the usable clock is spread over when `go` gives no movestogo."""
    hard_factor: float = 3.0
    """The hard deadline is at most this many budgets after the `go`."""
    max_share: float = 0.25
    """... and at most this share of the usable clock (plus most of the increment)."""
    hurry_ms: int = 300
    """Below this budget the player decides on the shallow pass alone."""

    def __post_init__(self) -> None:
        for name, amount, minimum in (("move overhead", self.move_overhead_ms, 0), ("moves horizon", self.horizon, 1),
                                      ("hurry time", self.hurry_ms, 0)):  # fmt: skip
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < minimum:
                raise SettingsError(f"invalid {name} {amount!r}: must be a whole number >= {minimum}")
        if not (math.isfinite(self.hard_factor) and self.hard_factor >= 1.0):
            raise SettingsError(f"invalid hard factor {self.hard_factor!r}: must be >= 1")
        if not (0.0 < self.max_share <= 1.0):
            raise SettingsError(f"invalid max clock share {self.max_share!r}: must be in (0, 1]")


@dataclass(frozen=True)
class Config:
    """Everything the UCI options set."""

    setup: EngineSetup = field(default_factory=EngineSetup)
    play: PlaySettings = field(default_factory=PlaySettings)
    time: TimeSettings = field(default_factory=TimeSettings)
    opponent: str = ""
    """UCI_Opponent as the GUI sent it ("[title] [elo|none] [computer|human] [name]")."""


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _replace(obj: Any, path: str, value: Any) -> Any:
    """`obj` with the field at dotted `path` replaced (each level re-validated by its dataclass)."""
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _replace(getattr(obj, head), rest, value)})


OptionKind = Literal["spin", "check", "combo", "string"]


@dataclass(frozen=True)
class OptionSpec:
    """One UCI option: its name and type as announced, and the field of `Config` it sets."""

    name: str
    kind: OptionKind
    path: str
    """Dotted field of `Config` (e.g. "play.tutor.epsilon")."""
    help: str
    minimum: int = 0
    maximum: int = SPIN_MAX
    choices: tuple[str, ...] = ()
    value: Literal["int", "float", "pawns", "text", "style", "bool"] = "int"
    """How the text is read: a whole number, a number, pawns or inf, free text, a style, a bool."""
    none_at: int | str | None = None
    """The UCI value that stands for None in the field (0 for "no limit", <empty> for "none")."""

    def show(self, config: Config) -> str:
        """The field's value as UCI text."""
        current = _get(config, self.path)
        if self.value == "pawns":
            return "inf" if current is None else f"{current:g}"
        if current is None:
            return "<empty>" if self.none_at in (None, "") else str(self.none_at)
        if self.kind == "check":
            return "true" if current else "false"
        if self.value == "float":
            return f"{current:g}"
        text = str(current)
        return text or "<empty>"

    def announce(self, config: Config) -> str:
        line = f"option name {self.name} type {self.kind} default {self.show(config)}"
        if self.kind == "spin":
            line += f" min {self.minimum} max {self.maximum}"
        if self.kind == "combo":
            line += "".join(f" var {choice}" for choice in self.choices)
        return line

    def parse(self, text: str) -> Any:
        """The field value of UCI text `text`; OptionError naming the option and the value."""
        raw = text.strip()
        if self.kind == "string" and raw == "<empty>":
            raw = ""
        if self.none_at is not None and raw == str(self.none_at):
            return None
        try:
            if self.kind == "check":
                if raw.lower() not in ("true", "false"):
                    raise ValueError("expected true or false")
                return raw.lower() == "true"
            if self.kind == "combo":
                return parse_style(raw) if self.value == "style" else _choose(raw, self.choices)
            if self.value == "int":
                number = int(raw)
                if not self.minimum <= number <= self.maximum:
                    raise ValueError(f"expected a whole number from {self.minimum} to {self.maximum}")
                return number
            if self.value in ("float", "pawns"):
                amount = float(raw)
                if math.isnan(amount) or (math.isinf(amount) and self.value != "pawns"):
                    raise ValueError("expected a finite number")
                return amount
            return raw
        except (ValueError, SettingsError) as error:
            reason = str(error)
            if reason.startswith(("invalid literal", "could not convert")):
                reason = "expected a whole number" if self.value == "int" else "expected a number"
            raise OptionError(f"invalid value {text.strip()!r} for option {self.name}: {reason}") from None


def _choose(raw: str, choices: tuple[str, ...]) -> str:
    for choice in choices:
        if raw.lower() == choice.lower():
            return choice
    raise ValueError(f"expected one of {', '.join(choices)}")


def _spin(
    name: str, path: str, help: str, minimum: int = 0, maximum: int = SPIN_MAX, none_at: int | None = None
) -> OptionSpec:
    return OptionSpec(name, "spin", path, help, minimum, maximum, none_at=none_at)


def _number(name: str, path: str, help: str) -> OptionSpec:
    return OptionSpec(name, "string", path, help, value="float")


# Every option, in the order `uci` announces them. Defaults come from the dataclasses.
OPTIONS: Final[tuple[OptionSpec, ...]] = (
    OptionSpec("Style", "combo", "play.style", "trap, tutor or best", choices=STYLES, value="style"),
    _spin("Seed", "play.seed", "seed of the tutor's draws (with the position)", 0, 2**31 - 1),
    OptionSpec("Engine", "string", "setup.engine", "stockfish, native, material or a UCI engine's path", value="text"),
    _spin("Nodes", "setup.nodes", "engine nodes per line (each move's search); 0: the backend's default", 0, none_at=0),
    _spin("Engine Depth", "setup.depth", "engine depth per line (UCI engines); 0: none", 0, 200, none_at=0),
    _spin("Threads", "setup.threads", "the engine's UCI Threads (1 keeps play reproducible)", 1, 1024),
    _spin("Hash", "setup.hash_mb", "the engine's UCI Hash, MiB", 1, 1 << 20),
    _spin("Shallow Depth", "setup.shallow_depth", "the shallow pass: engine depth (UCI) or plies (native)", 1, 100),
    OptionSpec("Human Model", "string", "setup.human_model", "human-move model file, default or none", value="text"),
    OptionSpec(
        "Human Corpus",
        "string",
        "setup.human_corpus",
        "mined dataset or corpus file; <empty>: none",
        value="text",
        none_at="",
    ),
    OptionSpec(
        "Safety Margin",
        "string",
        "play.diffimax.safety_margin",
        "pawns the trap style may give up against the best move, or inf",
        value="pawns",
    ),
    _spin("Search Depth", "play.diffimax.depth", "plies of the native engine's full-depth search", 1, 64),
    OptionSpec("Exclude Checks", "check", "play.diffimax.exclude_checks", "checking replies are no traps"),
    OptionSpec("Exclude Captures", "check", "play.diffimax.exclude_captures", "capturing replies are no traps"),
    _spin(
        "Trap Candidates",
        "play.trap_candidates",
        "trap style: moves (by the shallow pass) valued at full depth",
        1,
        500,
    ),
    _spin("Opponent Rating", "play.opponent_rating", "the opponent's rating for the human evidence", 0, 4000),
    _number("Practical P", "play.judges.practical_p", "practical judge: smallest human probability of a trap"),
    _spin(
        "Practical Shallow K", "play.judges.practical_shallow_k", "practical judge: shallow ranks needing less", 0, 500
    ),
    _number("Practical Shallow P", "play.judges.practical_shallow_p", "practical judge: probability enough for those"),
    _number("Practical Drop", "play.judges.practical_drop", "practical judge: smallest loss of win chances (0-2)"),
    _number("Stability Margin", "play.judges.stability_margin", "practical judge: searched deeper this near the drop"),
    _spin("Trappy K", "play.judges.trappy_k", "trappy judge: among the shallow pass's k best", 1, 500),
    _spin("Corpus Min Games", "play.judges.corpus_min_games", "corpus games a position needs to count", 1),
    _spin("Rating Band", "play.judges.rating_band", "corpus: width of the band of mover ratings", 0, 4000),
    _spin("Tutor Rating", "play.tutor.rating", "tutor: the rating the model imitates for our moves", 0, 4000),
    _number("Epsilon", "play.tutor.epsilon", "tutor: starting smallest human probability of a move"),
    _number("Epsilon Min", "play.tutor.epsilon_min", "tutor: epsilon never falls below this"),
    _number("Epsilon Max", "play.tutor.epsilon_max", "tutor: epsilon never rises above this"),
    _number("Epsilon Raise", "play.tutor.raise_factor", "tutor: epsilon times this after a punished mistake"),
    _number("Epsilon Lower", "play.tutor.lower_factor", "tutor: epsilon times this after a spared mistake"),
    _spin("Mistake", "play.tutor.mistake_cp", "tutor: centipawns that make a move a mistake to punish"),
    _number("Punish Share", "play.tutor.punish_share", "tutor: share of a mistake a reply must keep to punish it"),
    _number("Opening Epsilon", "play.tutor.opening_epsilon", "tutor: epsilon at move 1"),
    _spin("Opening Moves", "play.tutor.opening_moves", "tutor: moves over which the opening epsilon fades", 0, 500),
    _number("Temperature", "play.tutor.temperature_cp", "tutor: T in centipawns (weight exp(loss / T))"),
    _spin("Max Loss", "play.tutor.max_loss_cp", "tutor: largest loss ever drawn, centipawns; 0: no limit"),
    _spin("Endgame Men", "play.tutor.endgame_men", "tutor: men besides kings that make an endgame", 0, 32),
    _spin("Decided", "play.tutor.decided_cp", "tutor: centipawns from level that decide an endgame"),
    _number("Endgame Epsilon", "play.tutor.endgame_epsilon", "tutor: epsilon in a decided endgame"),
    _spin("Move Overhead", "time.move_overhead_ms", "ms kept back from the clock for transmission", 0, 60_000),
    _spin("Moves Horizon", "time.horizon", "moves the clock is spread over without movestogo", 1, 1000),
    _number("Hard Factor", "time.hard_factor", "the hard deadline in budgets"),
    _number("Max Clock Share", "time.max_share", "the hard deadline's largest share of the clock"),
    _spin("Hurry Time", "time.hurry_ms", "ms of budget below which only the shallow pass runs", 0, 60_000),
    OptionSpec("UCI_Opponent", "string", "opponent", "set by the GUI: title, elo, computer|human, name", value="text"),
)
BY_NAME: Final = {spec.name.lower(): spec for spec in OPTIONS}
# Options whose change re-opens what the player runs on.
SETUP_PREFIX: Final = "setup."


def set_option(config: Config, name: str, text: str) -> Config:
    """`config` with option `name` set from UCI text; OptionError / SettingsError in one line."""
    spec = BY_NAME.get(name.strip().lower())
    if spec is None:
        raise OptionError(f"no option named {name.strip()!r}")
    value = spec.parse(text)
    if spec.path == "setup.engine":
        _check_engine(value)
    elif spec.path == "setup.human_model" and value.lower() not in ("default", "none"):
        if not Path(model_path(value)).is_file():
            raise OptionError(f"invalid value {value!r} for option {spec.name}: no model file there")
    elif spec.path == "setup.human_corpus" and value is not None and not Path(value).exists():
        raise OptionError(f"invalid value {value!r} for option {spec.name}: no corpus there")
    try:
        updated: Config = _replace(config, spec.path, value)
    except SettingsError as error:
        raise OptionError(f"invalid value {text.strip()!r} for option {spec.name}: {error}") from None
    if spec.path == "opponent":
        rating = opponent_rating(value)
        if rating is not None:
            updated = dataclasses.replace(updated, play=dataclasses.replace(updated.play, opponent_rating=rating))
    return updated


def _check_engine(spec: str) -> None:
    if spec in EMBEDDED:
        return
    from pipeline.engines.process import resolve_engine

    try:
        resolve_engine(spec)
    except DiffimaxError as error:
        raise OptionError(f"invalid value {spec!r} for option Engine: {error}") from None


def opponent_rating(text: str) -> int | None:
    """The elo in UCI_Opponent ("GM 2800 human Magnus Carlsen", "none none computer X"), if any."""
    tokens = text.split()
    if len(tokens) >= 2 and tokens[1].isdigit():
        return int(tokens[1])
    return None


def configure(config: Config, options: Iterable[tuple[str, str]]) -> Config:
    """`config` with every (name, value) set, in order (the command line's flags and --option)."""
    for name, text in options:
        config = set_option(config, name, text)
    return config


# -- go and the clock ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Go:
    """The parameters of one `go` (times in milliseconds)."""

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    movetime: int | None = None
    depth: int | None = None
    nodes: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] | None = None


GO_NUMBERS: Final = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes", "mate")


def parse_go(tokens: list[str]) -> tuple[Go, list[str]]:
    """`go` parameters, and a one-line complaint for each token that could not be read (skipped)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index].lower()
        if token in GO_NUMBERS:
            text = tokens[index + 1] if index + 1 < len(tokens) else ""
            try:
                number = int(text)
            except ValueError:
                problems.append(f"go {token}: expected a whole number, got {text or '(nothing)'!r}")
                index += 1 if not text or text.lower() in GO_NUMBERS else 2
                continue
            if token in ("wtime", "btime"):
                number = max(0, number)  # some GUIs send a negative clock after a flag fall
            elif number < (1 if token in ("movestogo", "depth", "nodes", "mate") else 0):
                problems.append(f"go {token}: {number} is out of range")
                index += 2
                continue
            values[token] = number
            index += 2
        elif token in ("infinite", "ponder"):
            values[token] = True
            index += 1
        elif token == "searchmoves":
            moves = []
            index += 1
            while index < len(tokens) and tokens[index].lower() not in (*GO_NUMBERS, "infinite", "ponder"):
                moves.append(tokens[index].lower())
                index += 1
            values["searchmoves"] = tuple(moves)
        else:
            problems.append(f"go: unknown parameter {tokens[index]!r}")
            index += 1
    return Go(**values), problems


@dataclass(frozen=True)
class TimePlan:
    """Seconds after the `go` (None: no deadline)."""

    soft: float | None = None
    hard: float | None = None
    hurry: bool = False


def plan_time(go: Go, turn: chess.Color, settings: TimeSettings) -> TimePlan:
    """The time plan of one `go` for the side `turn` (see the module docstring)."""
    overhead = settings.move_overhead_ms / 1000
    hurry = settings.hurry_ms / 1000
    if go.infinite or go.ponder:
        return TimePlan()
    if go.movetime is not None:
        hard = max(0.001, go.movetime / 1000 - overhead)
        return TimePlan(0.8 * hard, hard, hard < hurry)
    clock = go.wtime if turn == chess.WHITE else go.btime
    if clock is None:
        return TimePlan()  # depth, nodes or nothing: the whole work, however long
    increment = (go.winc if turn == chess.WHITE else go.binc) or 0
    usable = max(0.0, clock / 1000 - overhead)
    moves = go.movestogo or settings.horizon
    bonus = 0.75 * increment / 1000 if usable > increment / 1000 else 0.0
    budget = usable / moves + bonus
    cap = (0.8 * usable if moves == 1 else settings.max_share * usable) + bonus
    hard = max(0.001, min(settings.hard_factor * budget, cap, usable))
    soft = min(budget, hard)
    return TimePlan(soft, hard, soft < hurry)


# -- the session ---------------------------------------------------------------------------------


def uci_score(value: int) -> str:
    """`cp N` or `mate N` from the side to move's value (mates in plies from the position)."""
    if is_mate_score(value):
        plies = MATE - abs(value)
        return f"mate {(plies + 1) // 2}" if value > 0 else f"mate -{plies // 2}"
    return f"cp {value}"


class Search:
    """One `go`: its worker, its deadline, and the single `bestmove` it sends."""

    def __init__(self, session: Session, board: chess.Board, go: Go, situation: Situation, plan: TimePlan) -> None:
        self.session = session
        self.board = board
        self.go = go
        self.situation = situation
        self.started = time.monotonic()
        self.control = Control(
            soft_deadline=None if plan.soft is None else self.started + plan.soft,
            hard_deadline=None if plan.hard is None else self.started + plan.hard,
            hurry=plan.hurry,
        )
        self.plan = plan
        self.waits_for_stop = go.infinite or go.ponder
        self.lock = threading.Lock()
        self.latest: Choice | None = None
        self.sent = False
        self.done = threading.Event()
        self.failure: str | None = None
        self.worker = threading.Thread(target=self._work, name="diffimax-play search", daemon=True)
        self.watcher = threading.Thread(target=self._watch, name="diffimax-play clock", daemon=True)

    def start(self) -> None:
        self.worker.start()
        if self.control.hard_deadline is not None:
            self.watcher.start()

    def start_clock(self, plan: TimePlan) -> None:
        """`ponderhit`: the time plan starts now, and the move goes out when the work is done."""
        now = time.monotonic()
        self.control.soft_deadline = None if plan.soft is None else now + plan.soft
        self.control.hard_deadline = None if plan.hard is None else now + plan.hard
        self.control.hurry = plan.hurry
        self.waits_for_stop = False
        if self.done.is_set():
            self.send()
        elif self.control.hard_deadline is not None:
            self.watcher.start()

    def offer(self, choice: Choice) -> None:
        with self.lock:
            self.latest = choice

    def _work(self) -> None:
        player = self.session.player
        try:
            if player is None:
                self.failure = self.session.unavailable or "no engine"
            else:
                player.choose(self.board, self.situation, self.control, self.offer)
        except DiffimaxError as error:  # an engine that failed twice, a broken model
            self.failure = f"{type(error).__name__}: {error}"
            self.session.broken = True
        except Exception as error:  # a bug: keep the traceback, still answer with a legal move
            traceback.print_exc(file=sys.stderr)
            self.failure = f"internal error {type(error).__name__}: {error}"
            self.session.broken = True
        finally:
            self.done.set()
        if not self.waits_for_stop:
            self.send()

    def _watch(self) -> None:
        deadline = self.control.hard_deadline
        assert deadline is not None
        self.done.wait(max(0.0, deadline - time.monotonic()))
        if not self.done.is_set() and not self.waits_for_stop:
            self.send()

    def stop(self) -> None:
        """`stop`, `quit`, or a new command that needs the search over: the move now."""
        self.send()

    def send(self) -> None:
        """Send `bestmove` once: the latest offer if it is legal, else the instant move."""
        with self.lock:
            if self.sent:
                return
            self.sent = True
            self.control.stop.set()
            choice = self.latest
        board = self.board
        lines: list[str] = []
        if self.failure:
            lines.append(f"info string error: {self.failure}")
        elapsed = time.monotonic() - self.started
        if not any(board.generate_legal_moves()):
            lines.append("info string no legal move: the game is over")
            self.session.write(*lines, "bestmove (none)")
            return
        legal = {move.uci() for move in board.legal_moves}
        if choice is not None and choice.move in legal:
            move = choice.move
            if not choice.complete:
                lines.append(f"info string stopped after {elapsed:.2f} s, before the style's last stage")
            score = choice.value if choice.value is not None else choice.shallow_value
            if score is not None:
                lines.append(f"info score {uci_score(score)} nodes {choice.nodes} time {round(elapsed * 1000)} "
                             f"pv {move}")  # fmt: skip
            lines.append(f"info string {choice.reason}")
        else:
            move = instant_move(board)
            choice = None
            lines.append(f"info string no search finished in {elapsed:.2f} s: {move}, the instant move")
        if self.session.player is not None:
            self.session.player.commit(board, move, choice)
        self.session.write(*lines, f"bestmove {move}")


class Session:
    """The UCI loop's state: the options, the position, the player and the search in progress."""

    def __init__(self, out: TextIO, config: Config | None = None) -> None:
        self.out = out
        self.config = config or Config()
        self.write_lock = threading.Lock()
        self.board: chess.Board | None = chess.Board()
        self.player: Player | None = None
        self.opened: EngineSetup | None = None  # what the player's resources were opened with
        self.unavailable: str | None = None  # why there is no player
        self.broken = False  # the backend failed: re-open it before the next search
        self.search: Search | None = None
        self.base_seconds: int | None = None
        self.model: MoveModel | None = None

    # -- output --------------------------------------------------------------------------------

    def write(self, *lines: str) -> None:
        with self.write_lock:
            try:
                for line in lines:
                    self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):  # the GUI has gone (closed pipe or file): nobody to tell
                pass

    def error(self, message: str) -> None:
        self.write(f"info string error: {' '.join(message.split())}")

    # -- resources -----------------------------------------------------------------------------

    def ensure_player(self) -> None:
        """Open the backend, model and corpus of the current setup, unless already open."""
        setup = self.config.setup
        if self.player is not None and self.opened == setup and not self.broken:
            self.player.settings = self.config.play
            return
        self.close_player()
        self.opened, self.broken = setup, False
        model: MoveModel | None = None
        corpus: Corpus | None = None
        try:
            model = load_model(setup.human_model)
            if model is not None:  # start its engine now, not during the first move
                model.move_probabilities(chess.Board(), MoverContext())
        except DiffimaxError as error:
            self.error(f"human model {setup.human_model!r} not loaded, playing without it: {error}")
            model = None
        if setup.human_corpus:
            try:
                corpus = Corpus.load(setup.human_corpus)
            except DiffimaxError as error:
                self.error(f"corpus not loaded, playing without it: {error}")
        try:
            backend = open_backend(setup.engine, setup.engine_options())
        except DiffimaxError as error:
            self.unavailable = f"engine {setup.engine!r} unavailable: {error}"
            self.error(self.unavailable + " (playing instant moves)")
            self.model = model
            return
        self.unavailable = None
        self.model = model
        self.player = Player(backend, self.config.play, model=model, corpus=corpus)

    def close_player(self) -> None:
        player, self.player = self.player, None
        if player is not None:
            # A search may still be finishing its last engine call: let it, within reason.
            locked = player.lock.acquire(timeout=CLOSE_WAIT)
            try:
                player.backend.close()
            finally:
                if locked:
                    player.lock.release()
        model, self.model = self.model, None
        if model is not None:
            model.close()

    # -- commands ------------------------------------------------------------------------------

    def finish_search(self) -> None:
        search, self.search = self.search, None
        if search is not None:
            search.stop()

    def handle(self, line: str) -> bool:
        """Run one command; False after `quit`."""
        tokens = line.split()
        if not tokens:
            return True
        command, args = tokens[0].lower(), tokens[1:]
        handler: Callable[[list[str], str], None] | None = {
            "uci": self.cmd_uci,
            "isready": self.cmd_isready,
            "setoption": self.cmd_setoption,
            "ucinewgame": self.cmd_ucinewgame,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": self.cmd_stop,
            "ponderhit": self.cmd_ponderhit,
            "debug": lambda args, line: None,
            "register": lambda args, line: self.write("registration ok"),
        }.get(command)
        if command == "quit":
            self.finish_search()
            self.close_player()
            return False
        if handler is None:
            self.error(f"unknown command {tokens[0]!r}")
            return True
        handler(args, line)
        return True

    def cmd_uci(self, args: list[str], line: str) -> None:
        self.write(f"id name {ENGINE_NAME}", f"id author {ENGINE_AUTHOR}",
                   *(spec.announce(self.config) for spec in OPTIONS), "uciok")  # fmt: skip

    def cmd_isready(self, args: list[str], line: str) -> None:
        if self.search is None or self.search.done.is_set():
            self.ensure_player()
        self.write("readyok")

    def cmd_setoption(self, args: list[str], line: str) -> None:
        text = line.strip()[len("setoption") :].strip()
        if not text.lower().startswith("name "):
            self.error(f"setoption needs 'name <option> [value <value>]', got {line.strip()!r}")
            return
        body = text[5:]
        lowered = body.lower()
        at = lowered.find(" value ")
        name, value = (body[:at], body[at + 7 :]) if at >= 0 else (body.removesuffix(" value"), "")
        try:
            self.config = set_option(self.config, name, value)
        except DiffimaxError as error:
            self.error(str(error))
            return
        if self.player is not None and self.opened == self.config.setup:
            self.player.settings = self.config.play

    def cmd_ucinewgame(self, args: list[str], line: str) -> None:
        self.finish_search()
        self.base_seconds = None
        if self.player is not None:
            with self.player.lock:
                self.player.settings = self.config.play
                self.player.new_game()

    def cmd_position(self, args: list[str], line: str) -> None:
        self.board = None
        if not args:
            self.error("position needs startpos or fen <FEN>")
            return
        lowered = [token.lower() for token in args]
        moves_at = lowered.index("moves") if "moves" in lowered else len(args)
        if lowered[0] == "startpos":
            board = chess.Board()
        elif lowered[0] == "fen":
            fen = " ".join(args[1:moves_at])
            try:
                board = chess.Board(fen)
            except ValueError as error:
                self.error(f"invalid FEN {fen!r} in position: {error}")
                return
            if board.status() != chess.STATUS_VALID:
                self.error(f"impossible position in FEN {fen!r}")
                return
        else:
            self.error(f"position needs startpos or fen, got {args[0]!r}")
            return
        for number, text in enumerate(args[moves_at + 1 :], start=1):
            try:
                move = board.parse_uci(text.lower())
            except ValueError:
                self.error(f"illegal move {text!r} (move {number} of the position command) in FEN {board.fen()!r}")
                return
            board.push(move)
        self.board = board

    def cmd_go(self, args: list[str], line: str) -> None:
        self.finish_search()
        go, problems = parse_go(args)
        for problem in problems:
            self.error(problem)
        board = self.board
        if board is None:
            self.error("no valid position: send position startpos|fen ... first")
            self.write("bestmove (none)")
            return
        self.ensure_player()
        if self.player is not None:
            self.player.settings = self.config.play
        turn = board.turn
        ours = go.wtime if turn == chess.WHITE else go.btime
        theirs = go.btime if turn == chess.WHITE else go.wtime
        if self.base_seconds is None and ours is not None:  # the first move of the game: clocks at base
            self.base_seconds = round(max(ours, theirs or 0) / 1000)
        increment = go.winc if turn == chess.WHITE else go.binc
        searchmoves = None
        if go.searchmoves is not None:
            legal = {move.uci() for move in board.legal_moves}
            searchmoves = frozenset(m for m in go.searchmoves if m in legal)
            unknown = sorted(set(go.searchmoves) - legal)
            if unknown:
                self.error(f"go searchmoves: {', '.join(unknown)} not legal here, ignored")
            if not searchmoves:
                searchmoves = None
        if go.mate is not None:
            self.error("go mate is not supported: searching as usual")
        situation = Situation(
            our_clock=None if ours is None else ours / 1000,
            their_clock=None if theirs is None else theirs / 1000,
            base_seconds=self.base_seconds,
            increment_seconds=None if increment is None else round(increment / 1000),
            searchmoves=searchmoves,
            nodes=go.nodes,
            depth=go.depth,
        )
        plan = plan_time(go, turn, self.config.time)
        self.search = Search(self, board.copy(), go, situation, plan)
        self.search.start()

    def cmd_stop(self, args: list[str], line: str) -> None:
        self.finish_search()

    def cmd_ponderhit(self, args: list[str], line: str) -> None:
        """We never ask to ponder (no Ponder option), but a `go ponder` the GUI sends anyway becomes
        a normal move at `ponderhit`: its clock starts now."""
        search = self.search
        if search is not None and search.go.ponder:
            search.start_clock(plan_time(dataclasses.replace(search.go, ponder=False), search.board.turn,
                                         self.config.time))  # fmt: skip

    def run(self, lines: Iterable[str]) -> int:
        try:
            for line in lines:
                if not self.handle(line):
                    return 0
        finally:
            self.finish_search()
            self.close_player()
        return 0


def run_uci(stdin: TextIO, stdout: TextIO, config: Config | None = None) -> int:
    """The UCI loop until `quit` or the end of input; the exit code."""
    return Session(stdout, config).run(iter(stdin.readline, ""))


def option_table() -> str:
    """Every option with its type, default and meaning, for docs and `--help`."""
    config = Config()
    rows = [f"{spec.name:<20} {spec.kind:<6} {spec.show(config):<10} {spec.help}" for spec in OPTIONS]
    return "\n".join(rows)


__all__ = [
    "OPTIONS",
    "Config",
    "EngineSetup",
    "Go",
    "OptionError",
    "PlaySettings",
    "Session",
    "TimeSettings",
    "configure",
    "parse_go",
    "plan_time",
    "run_uci",
    "set_option",
]
