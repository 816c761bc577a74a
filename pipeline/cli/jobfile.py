"""A job file: a command's flags written once in TOML and given as `--config job.toml`.

Its keys are the command's flag names without the dashes (`max-games = 300`, `human-model =
"maia3"`, `judges = "practical,dip"`), and `inputs` for the PGN inputs of `mine`; a
bool flag takes `true` or `false` (`rated-only = true`, `rated-only = false` for `--any-rated`).
The judges' thresholds, which are no flags, are its `[thresholds]` table (`model-p = 0.25`,
`practical-drop = 10`: `pipeline.cli.options.JudgeThresholds`).
A flag given on the command line overrides the file. The file's values reach the command as
click's `default_map` (they stand where a flag's default stood), so every value is checked and
converted as the flag's own, and a job's identity (`OUT/job.json`) records the merged settings.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer

from pipeline.cli.options import JOB_TABLE, THRESHOLDS_META, UsageError, thresholds_of


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
    unknown = sorted(key for key in data if key not in keys and key != JOB_TABLE)
    if unknown:
        known = ", ".join(sorted(keys))
        raise UsageError(f"job file {value!r}: unknown key {unknown[0]!r} ({ctx.info_name} takes: {known})")
    by_name = {p.name: p for p in ctx.command.params}
    defaults: dict[str, Any] = dict(ctx.default_map or {})
    for key, item in data.items():
        if key == JOB_TABLE:
            if not isinstance(item, dict):
                raise UsageError(f"job file {value!r}: {key!r} is a table ([{JOB_TABLE}]) of the judges' thresholds")
            ctx.meta[THRESHOLDS_META] = thresholds_of(item, f"job file {value!r}")
            continue
        if isinstance(item, dict):
            raise UsageError(
                f"job file {value!r}: key {key!r} holds a table; give flags at the top level (the one table is "
                f"[{JOB_TABLE}], the judges' thresholds)"
            )
        try:  # checked here, so that a bad value is said with the file that holds it
            by_name[keys[key]].process_value(ctx, item)
        except typer.BadParameter as error:
            raise UsageError(f"job file {value!r}: invalid {key} = {item!r}: {error.message}") from None
        defaults[keys[key]] = item
    ctx.default_map = defaults
    return value


JobFileOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        help="A job file (TOML): the flags' values by name without dashes; flags given here override it.",
        callback=read_job_file,
        is_eager=True,
    ),
]
