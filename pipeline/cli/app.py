"""The `diffimax` application and its console entry point (`main`): how errors end a run."""

from __future__ import annotations

import sys
import traceback

import typer

from pipeline.common.storage import redact
from search.errors import DiffimaxError

app = typer.Typer(
    name="diffimax",
    help="Find chess traps with DiffiMax: minimax plus analysis of the opponent's plausible mistakes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Exit codes: 1 for what the user can fix (one line), 2 for a command line the parser rejects,
# 130 / 143 for an interrupt or SIGTERM, and INTERNAL_ERROR (with the traceback) for a bug.
INTERNAL_ERROR = 70


def main(command: str | None = None, prog_name: str | None = None, args: list[str] | None = None) -> None:
    """Console entry point: what a user can cause (`DiffimaxError`, an OS error naming its path)
    is one line on stderr; anything else is a bug and keeps its traceback. Every line is
    `redact`ed: a URL's credentials never reach the terminal or a log. `command` runs one command
    of the app as a program of its own, named `prog_name` in its usage line (`python -m jobs.mine`)."""
    try:
        if command is None:
            app(standalone_mode=False, prog_name=prog_name, args=args)
        else:
            group = typer.main.get_group(app)
            one = group.get_command(typer.Context(group), command)
            if one is None:
                raise ValueError(f"no command {command!r}")  # a caller's bug, not a user's
            one.main(args=args, prog_name=prog_name, standalone_mode=False)
    except DiffimaxError as error:
        typer.echo(redact(f"diffimax: error: {error}"), err=True)
        sys.exit(getattr(error, "exit_code", 1))
    except OSError as error:
        typer.echo(redact(f"diffimax: error: {error}"), err=True)
        sys.exit(1)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("diffimax: interrupted", err=True)
        sys.exit(130)
    except Exception as error:
        # Usage errors from the command-line parser (typer vendors click, so match by shape).
        format_message = getattr(error, "format_message", None)
        if format_message is None:
            sys.stderr.write(redact(traceback.format_exc()))
            typer.echo(f"diffimax: internal error (a bug, please report it): {type(error).__name__}", err=True)
            sys.exit(INTERNAL_ERROR)
        prefix = "" if type(error).__name__.startswith("NoArgsIsHelp") else "diffimax: error: "
        typer.echo(redact(f"{prefix}{format_message()}"), err=True)
        sys.exit(getattr(error, "exit_code", 2))
