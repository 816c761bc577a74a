"""The UCI options of `diffimax play`: what they set (`Config`: the engine setup, the play settings,
the time settings), how each is announced, read and shown (`OPTIONS`), and `set_option`, which
checks a value before it is taken (an unknown option or a bad value is one `OptionError` line).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pipeline.common.files import TIB_IN_MIB
from pipeline.engines.backends import EMBEDDED
from pipeline.engines.options import EngineOptions
from pipeline.human.models import resolve_model
from pipeline.judging import HumanEvidence
from pipeline.play.clock import TimeSettings
from pipeline.play.styles import STYLES, PlaySettings, check_whole, parse_style
from search.errors import DiffimaxError
from search.settings import SettingsError
from search.values import win_drop_of_points, win_percent_points

# Per-line node limit of play's engine searches: ~30-70 ms of Stockfish 15.1 on this machine,
# enough for a trap-style move in about a second of a 1+0 game.
DEFAULT_PLAY_NODES: Final = 20_000
# Largest value of a spin option that has no natural bound.
SPIN_MAX: Final = 1_000_000_000


class OptionError(DiffimaxError, ValueError):
    """A `setoption` (or `--option`) naming no option, or a value the option does not take."""


# How play runs its engine unless an option says otherwise: one thread keeps node-limited play
# reproducible; a small hash; the shallow pass at depth 4.
PLAY_ENGINE: Final = EngineOptions(threads=1, hash_mb=16, nodes=DEFAULT_PLAY_NODES, shallow_depth=4)
PLAY_HUMAN: Final = HumanEvidence(model="default")


@dataclass(frozen=True)
class EngineSetup:
    """What the player runs on, as the judging kit takes it (`pipeline.judging.open_kit`): the
    engine, its options and the human evidence; a change re-opens what it names."""

    engine: str = "stockfish"
    """stockfish, native, material or a UCI engine's path."""
    options: EngineOptions = PLAY_ENGINE
    human: HumanEvidence = PLAY_HUMAN

    def __post_init__(self) -> None:
        for name, amount in (
            ("threads", self.options.threads),
            ("hash", self.options.hash_mb),
            ("shallow depth", self.options.shallow_depth),
        ):
            if amount is not None:
                check_whole(name, amount, 1)


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
    value: Literal["int", "float", "pawns", "win_pct", "text", "style", "bool"] = "int"
    """How the text is read: a whole number, a number, pawns or inf, points of Win% (a loss of win
    chances, as the CLI's flags take it; the field holds it on [0, 2]), free text, a style, a bool."""
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
        if self.value == "win_pct":
            return f"{round(win_percent_points(current), 9):g}"
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
            if self.value in ("float", "pawns", "win_pct"):
                amount = float(raw)
                if math.isnan(amount) or (math.isinf(amount) and self.value != "pawns"):
                    raise ValueError("expected a finite number")
                return win_drop_of_points(amount) if self.value == "win_pct" else amount
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


def _win_pct(name: str, path: str, help: str) -> OptionSpec:
    return OptionSpec(name, "string", path, help, value="win_pct")


# Every option, in the order `uci` announces them. Defaults come from the dataclasses.
OPTIONS: Final[tuple[OptionSpec, ...]] = (
    OptionSpec("Style", "combo", "play.style", "trap, tutor or best", choices=STYLES, value="style"),
    _spin("Seed", "play.seed", "seed of the tutor's draws (with the position)", 0, 2**31 - 1),
    OptionSpec("Engine", "string", "setup.engine", "stockfish, native, material or a UCI engine's path", value="text"),
    _spin(
        "Nodes",
        "setup.options.nodes",
        "engine nodes per line (each move's search); 0: the backend's default",
        0,
        none_at=0,
    ),
    _spin("Engine Depth", "setup.options.depth", "engine depth per line (UCI engines); 0: none", 0, 200, none_at=0),
    _spin("Threads", "setup.options.threads", "the engine's UCI Threads (1 keeps play reproducible)", 1, 1024),
    _spin("Hash", "setup.options.hash_mb", "the engine's UCI Hash, MiB", 1, TIB_IN_MIB),
    _spin(
        "Shallow Depth", "setup.options.shallow_depth", "the shallow pass: engine depth (UCI) or plies (native)", 1, 100
    ),
    OptionSpec("Human Model", "string", "setup.human.model", "human-move model file, default or none", value="text"),
    OptionSpec(
        "Human Corpus",
        "string",
        "setup.human.corpus",
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
    _win_pct("Practical Drop", "play.judges.practical_drop", "practical judge: smallest loss, points of Win% (0-100)"),
    _win_pct(
        "Stability Margin", "play.judges.stability_margin", "practical judge: Win% points near the drop searched deeper"
    ),
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


def set_option(config: Config, name: str, text: str) -> Config:
    """`config` with option `name` set from UCI text; OptionError / SettingsError in one line."""
    spec = BY_NAME.get(name.strip().lower())
    if spec is None:
        raise OptionError(f"no option named {name.strip()!r}")
    value = spec.parse(text)
    if spec.path == "setup.engine":
        _check_engine(value)
    elif spec.path == "setup.human.model":
        try:
            resolve_model(value)
        except DiffimaxError as error:
            raise OptionError(f"invalid value {value!r} for option {spec.name}: {error}") from None
    elif spec.path == "setup.human.corpus" and value is not None and not Path(value).exists():
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


def option_table() -> str:
    """Every option with its type, default and meaning, for docs and `--help`."""
    config = Config()
    rows = [f"{spec.name:<20} {spec.kind:<6} {spec.show(config):<10} {spec.help}" for spec in OPTIONS]
    return "\n".join(rows)
