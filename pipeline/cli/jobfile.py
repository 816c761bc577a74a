"""A job file: a command's flags written once in TOML and given as `--config job.toml`.

Its keys are the command's flag names without the dashes (`max-games = 300`, `human-model =
"maia3"`, `judges = "practical,dip"`), and `inputs` for the PGN inputs of `mine`; a
bool flag takes `true` or `false` (`rated-only = true`, `rated-only = false` for `--any-rated`).
Settings that are no flags are its tables, each key a field of a flag group made by
`pipeline.cli.options.from_job_file`: `[thresholds]` (the judges', `model-p = 0.25`), `[engine-options]`
(`threads`, `hash`, `depth`, `movetime`, `shallow-depth`), `[search]` (`scope`, `exclude-checks`,
`exclude-captures`), and a command's own (`prototype`'s `[tree-shape]` and `[rule]`, `human train`'s
`[lightgbm]`). Each value is checked by kind and against its range (`pipeline.cli.limits.BOUNDS`,
the row `table.key`), and the group's own `check`, and said with the file that holds it.
A flag given on the command line overrides the file. The file's values reach the command as
click's `default_map` (they stand where a flag's default stood), so every value is checked and
converted as the flag's own, and a job's identity (`OUT/job.json`) records the merged settings.
"""

from __future__ import annotations

import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any

import typer

from pipeline.cli.limits import check, range_of
from pipeline.cli.options import JOB_FILE_FIELDS, JOB_TABLES_META, UsageError
from search.settings import SettingsError

# A table's fields: key -> (the flag group, the field's name), as `with_flags` records them.
TableFields = dict[str, tuple[type, str]]


def _keys(command: Any, skip: str) -> dict[str, str]:
    """Each key a job file may hold for `command`, and the parameter it sets."""
    keys: dict[str, str] = {}
    for param in command.params:
        if param.name is None or param.name == skip:
            continue
        if param.param_type_name == "argument":
            keys[param.name] = param.name
            continue
        for flag in param.opts:
            keys[flag.lstrip("-")] = param.name
    return keys


def read_job_file(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """The `--config` callback (eager: it runs before the other flags are read): the file's
    values become the defaults of the flags not given on the command line."""
    if value is None or ctx.resilient_parsing:
        return value
    path = Path(value)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read job file {value!r}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"job file {value!r} is not TOML: {error}") from None
    keys = _keys(ctx.command, param.name or "")
    tables: dict[str, TableFields] = getattr(ctx.command.callback, JOB_FILE_FIELDS, {})
    where = f"job file {value!r}"
    unknown = sorted(key for key in data if key not in keys and key not in tables)
    if unknown:
        known = ", ".join([*sorted(keys), *(f"[{table}]" for table in sorted(tables))])
        raise UsageError(f"{where}: unknown key {unknown[0]!r} ({ctx.info_name} takes: {known})")
    by_name = {p.name: p for p in ctx.command.params}
    defaults: dict[str, Any] = dict(ctx.default_map or {})
    given: dict[str, dict[str, Any]] = {}
    for key, item in data.items():
        if key in tables:
            if not isinstance(item, dict):
                raise UsageError(f"{where}: {key!r} is a table: write it as [{key}] with its keys below")
            given[key] = read_table(key, item, tables[key], ctx.info_name or "", where)
            continue
        if isinstance(item, dict):
            named = ", ".join(f"[{table}]" for table in sorted(tables)) or "none"
            raise UsageError(f"{where}: key {key!r} holds a table; give flags at the top level (tables: {named})")
        try:  # checked here, so that a bad value is said with the file that holds it
            by_name[keys[key]].process_value(ctx, item)
        except typer.BadParameter as error:
            raise UsageError(f"{where}: invalid {key} = {item!r}: {error.message}") from None
        defaults[keys[key]] = item
    ctx.default_map = defaults
    ctx.meta[JOB_TABLES_META] = given
    return value


def read_table(table: str, items: dict[str, Any], fields: TableFields, command: str, where: str) -> dict[str, Any]:
    """A job file's `[table]` as its fields' values: one line for a key the table does not hold,
    a value of the wrong kind or out of its range, or one its group's `check` refuses."""
    values: dict[str, Any] = {}
    for key, item in items.items():
        if key not in fields:
            raise UsageError(f"{where}: unknown key {table}.{key} ([{table}] holds: {', '.join(fields)})")
        group, name = fields[key]
        hint = typing.get_type_hints(group)[name]
        kind = next(kind for kind in typing.get_args(hint) or (hint,) if kind is not type(None))
        values[key] = _of_kind(item, kind, f"{where}: invalid {table}.{key} = {item!r}")
        bound = range_of(command, f"{table}.{key}")
        if isinstance(values[key], int | float) and not isinstance(values[key], bool):
            if bound is None:  # a programming error: every numeric table key has a row
                raise TypeError(f"no row in pipeline.cli.limits.BOUNDS for {table}.{key}")
            try:
                check(f"{table}.{key}", values[key], bound)
            except UsageError as error:
                raise UsageError(f"{where}: {error}") from None
    for group in {group for group, _ in fields.values()}:
        checker = getattr(group, "check", None)
        if checker is None:
            continue
        mine = {name: values[key] for key, (owner, name) in fields.items() if owner is group and key in values}
        try:
            checker(group(**mine))
        except (SettingsError, UsageError) as error:
            raise UsageError(f"{where}: [{table}]: {error}") from None
    return values


def _of_kind(item: Any, kind: Any, said: str) -> Any:
    """`item` as a value of `kind` (int, float, str or bool), else UsageError opening with `said`."""
    number = isinstance(item, int | float) and not isinstance(item, bool)
    if kind is bool and not isinstance(item, bool):
        raise UsageError(f"{said}: expected true or false")
    if kind is int and not (number and isinstance(item, int)):
        raise UsageError(f"{said}: expected a whole number")
    if kind is float and not number:
        raise UsageError(f"{said}: expected a number")
    if kind is str and not isinstance(item, str):
        raise UsageError(f"{said}: expected text")
    return float(item) if kind is float else item


JobFileOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        help="A job file (TOML): the flags' values by name without dashes; flags given here override it.",
        callback=read_job_file,
        is_eager=True,
    ),
]
