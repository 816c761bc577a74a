"""The flags several commands share, declared once, and what turns them into settings.

A group of flags is a frozen dataclass whose fields are typer `Annotated` options
(`SearchFlags`, `EngineFlags`, `EvidenceFlags`). A command that takes a parameter annotated with
one of them is wrapped by `with_flags`: typer sees the group's fields in its place, and the
command receives the group, built from the values given. A group holds the raw values; its
methods validate them when the command asks, so errors come in the order the command meets
them. A group's tuning knobs are no flags but a job file's tables (`from_job_file`): the judges'
thresholds (`JudgeThresholds`, `[thresholds]`), the engine's secondary limits (`[engine-options]`), the
replies DiffiMax counts as alternatives (`[search]`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

import typer

from pipeline.engines.backends import EMBEDDED, default_engine
from pipeline.engines.options import EngineOptions
from pipeline.human.models import MODEL_HELP
from search.errors import DiffimaxError
from search.judges import JudgeName, JudgeSettings, parse_judges
from search.settings import DiffiMaxSettings, parse_scope
from search.values import win_drop_of_points, win_percent_points


class UsageError(DiffimaxError, ValueError):
    """A command-line value that no setting accepts."""


# The DiffiMax settings, the same flags on every command that searches.
Depth = Annotated[int | None, typer.Option("--depth", help="Search Depth in plies below the root.")]
ReasonableDip = Annotated[float, typer.Option("--reasonable-dip", help="Reasonable Player Dip R in pawns.")]
TrapDip = Annotated[float, typer.Option("--trap-dip", help="Trap Dip Threshold T in pawns (T <= R).")]
SafetyMargin = Annotated[
    str,
    typer.Option("--safety-margin", help="Pawns the setter may give up for a trap line, or inf (exhaustive)."),
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

# Flags of one meaning on every command that has them (tests/test_cli_vocabulary.py holds each
# name to one help text and one default).
DATA_HELP = "The dataset (mine --out): a directory, s3:// or gs://."
DataOpt = Annotated[str, typer.Option("--data", help=DATA_HELP)]
OptionalDataOpt = Annotated[str | None, typer.Option("--data", help=DATA_HELP)]
GamesOpt = Annotated[
    list[str], typer.Option("--games", help="PGN files, directories, globs, or a mined dataset directory.")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the command's random choices (samples, trees, draws).")]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Parallel workers (default: this machine's CPUs); the command's description says which count runs "
        "without Ray.",
    ),
]
PoolOpt = Annotated[
    str,
    typer.Option(
        "--pool", help="The ratings' pool: lichess, chesscom, or auto (each game's Site/Link; unknown without one)."
    ),
]
GameRateOpt = Annotated[float, typer.Option("--game-rate", help="Share of the games read (a seeded sample).")]
SplitOpt = Annotated[
    str, typer.Option("--split", help="Which games of the shared files: held_out, tune, train or all.")
]
RATING_HELP = "The opponent's rating (their human evidence)."
RatingOpt = Annotated[int | None, typer.Option("--rating", help=RATING_HELP)]
RootOpt = Annotated[str, typer.Option("--root", help="Who moves at the root: max (the setter) or min.")]
# A position as moves played (read by `search.chessgame.play_moves`): repertoire, explain.
FromOpt = Annotated[str | None, typer.Option("--from", help="Start from this FEN (default: the start).")]
MovesOpt = Annotated[str | None, typer.Option("--moves", help='Moves from the start (or --from), e.g. "e4 e5 Nf3".')]
TableMbOpt = Annotated[
    float,
    typer.Option("--table-mb", help="MiB of each worker's table of engine answers (repeats reuse them; 0: none)."),
]
FilesOpt = Annotated[
    str, typer.Option("--files", help="Comma list of the files to write (see the command's help), or all.")
]
ListOpt = Annotated[bool, typer.Option("--list", help="List the saved queries.")]
FormatOpt = Annotated[str, typer.Option("--format", help="table, csv or json.")]
PlanOpt = Annotated[
    bool, typer.Option("--plan", help="Estimate the cost (engine core-hours, wall time) and stop: nothing is written.")
]
AddressOpt = Annotated[str | None, typer.Option("--address", help="An existing Ray cluster's address.")]

# How to run the engine, the same flags on every command that uses one.
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="stockfish (the default where installed), native (the embedded engine), or a UCI engine's path.",
    ),
]
NodesOpt = Annotated[int | None, typer.Option("--nodes", help="Engine node limit per search.")]

# The trap judges, the same flags on explain and mine.
JudgesOpt = Annotated[
    str | None,
    typer.Option(
        "--judges",
        help="Comma list of dip, trappy, human, model, practical, or all (default: all for explain and evaluate; "
        "human,model,practical for mine and plan; practical for repertoire).",
    ),
]
HumanModelOpt = Annotated[
    str,
    typer.Option("--human-model", help=MODEL_HELP),
]
HumanCorpusOpt = Annotated[
    str | None,
    typer.Option("--human-corpus", help="A mined dataset or corpus file: what humans played where (human judge)."),
]
AllowPartialOpt = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="Read a dataset with missing or damaged shards, or an unfinished one: says what is left out.",
    ),
]


def workers_or_cpus(workers: int | None) -> int:
    """`--workers` as given, else this machine's CPUs (its one default on every command)."""
    return workers if workers is not None else os.cpu_count() or 1


def uci_engine(engine: str | None, command: str) -> str:
    """`--engine` for a command that needs a UCI engine (MultiPV, node counts): the default one
    where none is given, and one line for the embedded engine."""
    name = engine or default_engine()
    if name in EMBEDDED:
        raise UsageError(f"{command} needs a UCI engine: --engine stockfish or a UCI engine's path, not {name!r}")
    return name


def parse_margin(safety_margin: str) -> float:
    """`--safety-margin`: pawns, or inf."""
    try:
        return float(safety_margin)
    except ValueError:
        raise UsageError(f"invalid safety margin {safety_margin!r}: expected pawns or inf") from None


class FlagGroup:
    """The base of a group of flags (a frozen dataclass of typer options) that `with_flags` expands.
    A field made by `from_job_file` is no flag: a job file's table sets it (`JobFileField`)."""


# Where a `from_job_file` field keeps its table and key (the dataclass field's metadata).
JOB_FILE_FIELD: Final = "diffimax.job_file"
# Where the job file's callback leaves its tables' values for the command (the click context's
# `meta`): {table: {key: value}}, checked and converted (`pipeline.cli.jobfile`).
JOB_TABLES_META: Final = "diffimax.job_tables"
# The parameter `with_flags` adds for typer to pass the click context (the job file's tables).
CONTEXT_PARAMETER: Final = "job_file_context"
# The attribute of a `with_flags` command naming the job-file fields it takes (for the job file).
JOB_FILE_FIELDS: Final = "__job_file_fields__"


@dataclass(frozen=True)
class JobFileField:
    """A setting a job file's `[table]` gives as `key = value` (`[engine-options]` `threads = 2`): a
    tuning knob, set in a file rather than a flag, so the command line stays one a person reads."""

    table: str
    key: str
    about: str


def from_job_file(table: str, default: Any, *, key: str = "", about: str) -> Any:
    """A flag group's field that a job file's `[table]` sets (`key`: the field's name with dashes)."""
    return dataclasses.field(default=default, metadata={JOB_FILE_FIELD: JobFileField(table, key, about)})


def job_file_fields(group: type) -> dict[str, JobFileField]:
    """The fields of `group` a job file sets: field name -> its table and key."""
    found = {}
    for item in dataclasses.fields(group):
        spec = item.metadata.get(JOB_FILE_FIELD)
        if spec is not None:
            found[item.name] = dataclasses.replace(spec, key=spec.key or item.name.replace("_", "-"))
    return found


def file_key(group: type, name: str) -> str:
    """How a message names field `name` of `group`: its table and key, "engine-options.threads"."""
    spec = job_file_fields(group)[name]
    return f"{spec.table}.{spec.key}"


@dataclass(frozen=True)
class SearchFlags(FlagGroup):
    """The DiffiMax settings as given (tree, explain, mine, repertoire): the dips, the depth and the
    margin as flags; which replies count as alternatives in a job file's `[search]` table."""

    depth: Depth = None
    reasonable_dip: ReasonableDip = 2.0
    trap_dip: TrapDip = 1.0
    safety_margin: SafetyMargin = "0.5"
    scope: str = from_job_file("search", "all", about="Opponent Responses: 2, 3, 4, 5 or all.")
    exclude_checks: bool = from_job_file("search", False, about="Ignore checking responses as alternatives.")
    exclude_captures: bool = from_job_file("search", False, about="Ignore capturing responses as alternatives.")

    def check(self) -> None:
        """SettingsError for a scope no search takes (a job file's `[search]` table)."""
        parse_scope(self.scope)

    def settings(self, default: int) -> DiffiMaxSettings:
        """The settings, with `default` plies when --depth is not given."""
        margin = parse_margin(self.safety_margin)
        if self.depth is not None and default >= 1 and self.depth < 1:
            # A chess search (default >= 1) must look below the root: at depth 0 no reply of the
            # responder is searched, and no reply can be judged. A textbook tree may be cut at 0.
            raise UsageError(f"invalid --depth {self.depth}: a chess search needs a depth of at least 1")
        return DiffiMaxSettings(
            depth=default if self.depth is None else self.depth,
            scope=parse_scope(self.scope),
            reasonable_dip=self.reasonable_dip,
            trap_dip=self.trap_dip,
            exclude_checks=self.exclude_checks,
            exclude_captures=self.exclude_captures,
            safety_margin=margin,
        )


@dataclass(frozen=True)
class EngineFlags(FlagGroup):
    """How to run the engine, as given (explain, mine, repertoire, evaluate): which engine and its
    node limit as flags; its secondary limits in a job file's `[engine-options]` table."""

    engine: EngineOpt = None
    nodes: NodesOpt = None
    engine_depth: int | None = from_job_file("engine-options", None, key="depth", about="UCI depth limit per search.")
    movetime: float | None = from_job_file("engine-options", None, about="UCI time limit per search (s).")
    threads: int | None = from_job_file("engine-options", None, about="UCI Threads per engine.")
    hash_mb: int | None = from_job_file("engine-options", None, key="hash", about="UCI Hash in MiB per engine.")

    def name(self) -> str:
        """The engine given, else the default one (Stockfish where installed)."""
        return self.engine or default_engine()

    def options(self, shallow_depth: int | None = None) -> EngineOptions:
        for name, value in (
            ("--nodes", self.nodes),
            (file_key(EngineFlags, "engine_depth"), self.engine_depth),
            (file_key(EngineFlags, "threads"), self.threads),
            (file_key(EngineFlags, "hash_mb"), self.hash_mb),
        ):
            if value is not None and value < 1:
                raise UsageError(f"invalid {name} {value}: must be a whole number >= 1")
        if self.movetime is not None and not self.movetime > 0:
            raise UsageError(
                f"invalid {file_key(EngineFlags, 'movetime')} {self.movetime}: must be a number of seconds above 0"
            )
        return EngineOptions(
            threads=self.threads,
            hash_mb=self.hash_mb,
            nodes=self.nodes,
            depth=self.engine_depth,
            movetime=self.movetime,
            shallow_depth=shallow_depth,
        )


@dataclass(frozen=True)
class EvidenceFlags(FlagGroup):
    """Which judges, and the human evidence they read (explain, mine, repertoire); the shallow
    pass's depth (the trappy judge's evidence) is the job file's `engine-options.shallow-depth`."""

    judges: JudgesOpt = None
    human_model: HumanModelOpt = "default"
    human_corpus: HumanCorpusOpt = None
    shallow_depth: int | None = from_job_file(
        "engine-options", None, about="The shallow pass (trappy judge): plies (native) or engine depth (UCI)."
    )


# The practical judge's drop as its flag takes it, in points of Win% (7.5).
PRACTICAL_DROP_POINTS: Final = win_percent_points(JudgeSettings.practical_drop)


@dataclass(frozen=True)
class JudgeThresholds(FlagGroup):
    """The judges' thresholds (explain, mine, repertoire), a job file's `[thresholds]` table (keys:
    the names with dashes, `model-p = 0.25`); defaults: `JudgeSettings`'. `check` holds them to
    the judges' ranges, so a bad value is said with the file that holds it."""

    trappy_k: int = from_job_file(
        "thresholds", JudgeSettings.trappy_k, about="Trappy judge: among the shallow search's k best."
    )
    model_p: float = from_job_file(
        "thresholds", JudgeSettings.model_p, about="Model judge: smallest probability of a candidate."
    )
    practical_rule: str = from_job_file(
        "thresholds",
        JudgeSettings.practical_rule,
        about="Practical judge: fall (the position's fall probability), reply (each reply's own), or both.",
    )
    practical_fall_p: float = from_job_file(
        "thresholds", JudgeSettings.practical_fall_p, about="Practical judge, fall rule: smallest fall probability."
    )
    practical_p: float = from_job_file(
        "thresholds", JudgeSettings.practical_p, about="Practical judge, reply rule: smallest human probability."
    )
    practical_drop: float = from_job_file(
        "thresholds",
        PRACTICAL_DROP_POINTS,
        about="Practical judge: smallest loss of win chance, in points of Lichess's Win% (0-100).",
    )
    practical_shallow_k: int = from_job_file(
        "thresholds",
        JudgeSettings.practical_shallow_k,
        about="Practical judge: the shallow pass's k best need less evidence.",
    )
    practical_shallow_p: float = from_job_file(
        "thresholds", JudgeSettings.practical_shallow_p, about="Practical judge: human probability enough for those."
    )
    corpus_share: float = from_job_file(
        "thresholds", JudgeSettings.corpus_share, about="Human judge: smallest share of games."
    )
    corpus_min_games: int = from_job_file(
        "thresholds", JudgeSettings.corpus_min_games, about="Human judge: fewest corpus games for a verdict."
    )

    def check(self) -> None:
        """SettingsError when a threshold is out of the judges' range."""
        build_judges(None, JudgeSettings.judges, self)


def build_judges(judges: str | None, default: frozenset[JudgeName], thresholds: JudgeThresholds) -> JudgeSettings:
    """The judge settings of `--judges` (`default` when not given) and the thresholds."""
    given = dataclasses.asdict(thresholds)
    # People give a loss in points of Win%; the judges (and the rows) hold it on [0, 2].
    given["practical_drop"] = win_drop_of_points(thresholds.practical_drop)
    return JudgeSettings(judges=default if judges is None else parse_judges(judges), **given)


Command = TypeVar("Command", bound=Callable[..., Any])


def with_flags(command: Command) -> Command:
    """`command` with each parameter annotated by a flag group replaced, for typer, by the
    group's flags (keyword-only, in field order, where the parameter stood); the command
    receives the group built from the values given. A group's `from_job_file` fields are no
    flags: typer passes the click context (CONTEXT_PARAMETER, unless the command takes its own),
    and each takes the value its job file's table gave (`pipeline.cli.jobfile`), else its
    default; a caller from Python may pass any field by name. Parameters before the first group
    keep their kind, so the wrapped function can still be called positionally."""
    hints = typing.get_type_hints(command, include_extras=True)
    shown: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    filed_of: dict[str, dict[str, JobFileField]] = {}  # each group's job-file fields, read once
    from_file: dict[str, dict[str, tuple[type, str]]] = {}  # table -> key -> (group, field), for the job file
    for parameter in inspect.signature(command, eval_str=True).parameters.values():
        group = hints.get(parameter.name)
        if not (isinstance(group, type) and issubclass(group, FlagGroup) and dataclasses.is_dataclass(group)):
            keep = parameter.kind if not groups else inspect.Parameter.KEYWORD_ONLY
            shown.append(parameter.replace(kind=keep, annotation=hints.get(parameter.name, parameter.annotation)))
            continue
        groups[parameter.name] = group
        field_hints = typing.get_type_hints(group, include_extras=True)
        filed = filed_of[parameter.name] = job_file_fields(group)
        for name, spec in filed.items():
            if from_file.setdefault(spec.table, {}).setdefault(spec.key, (group, name)) != (group, name):
                raise TypeError(f"{command.__name__}: two fields are the job file's {spec.table}.{spec.key}")
        shown += [
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=field_hints[f.name])
            for f in dataclasses.fields(group)
            if f.name not in filed
        ]
    # Typer passes the click context to one parameter: the command's own, else one added here.
    own_context = next((p.name for p in shown if p.annotation is typer.Context), None)
    if from_file and own_context is None:
        shown.append(
            inspect.Parameter(CONTEXT_PARAMETER, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=typer.Context)
        )
    names = [p.name for p in shown]
    if len(names) != len(set(names)) or set(groups) & set(names):
        raise TypeError(f"{command.__name__}: a flag group's field repeats a parameter's name")

    @functools.wraps(command)
    def with_groups(*args: Any, **values: Any) -> Any:
        context = values.get(own_context) if own_context else values.pop(CONTEXT_PARAMETER, None)
        tables: dict[str, dict[str, Any]] = {} if context is None else context.meta.get(JOB_TABLES_META, {})
        for name, group in groups.items():
            given = {f.name: values.pop(f.name) for f in dataclasses.fields(group) if f.name in values}
            for field_name, spec in filed_of[name].items():
                if field_name not in given and spec.key in tables.get(spec.table, {}):
                    given[field_name] = tables[spec.table][spec.key]
            values[name] = group(**given)
        return command(*args, **values)

    with_groups.__signature__ = inspect.Signature(shown, return_annotation=hints.get("return"))  # type: ignore[attr-defined]
    with_groups.__annotations__ = {p.name: p.annotation for p in shown} | {"return": hints.get("return")}
    setattr(with_groups, JOB_FILE_FIELDS, from_file)
    return typing.cast(Command, with_groups)


def emit(data: dict[str, Any] | None, text: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(text)
