"""`diffimax play`: the UCI engine on stdin and stdout."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from pipeline.cli.options import EngineOpt, HumanModelOpt, NodesOpt, RatingOpt


def play(
    style: Annotated[str | None, typer.Option("--style", help="trap, tutor or best (UCI option Style).")] = None,
    engine: EngineOpt = None,
    nodes: NodesOpt = None,
    human_model: HumanModelOpt = "default",
    opponent_rating: RatingOpt = None,  # UCI option Opponent Rating
    option: Annotated[
        list[str] | None,
        typer.Option("--option", help="Any UCI option as 'Name=value' (repeatable); --list-options names them."),
    ] = None,
    list_options: Annotated[bool, typer.Option("--list-options", help="List the UCI options and exit.")] = False,
) -> None:
    """Run the UCI engine on stdin/stdout: it sets traps (style trap), loses plausibly (tutor) or
    plays the backend's best move (best). Its flags set the UCI options a GUI sets most (Style,
    Engine, Nodes, Human Model, Opponent Rating); --option sets any other, as a GUI's setoption
    does (--option "Threads=2" --option "Tutor Rating=1500"; docs/play.md, --list-options)."""
    from pipeline.engines.backends import default_engine
    from pipeline.play.uci_options import Config, OptionError, configure, option_table
    from pipeline.play.uci_server import run_uci

    if list_options:
        typer.echo(option_table())
        return
    given: list[tuple[str, str]] = [
        (name, str(value))
        for name, value in (
            ("Style", style),
            ("Engine", engine or default_engine()),
            ("Nodes", nodes),
            ("Human Model", human_model),
            ("Opponent Rating", opponent_rating),
        )
        if value is not None
    ]
    for item in option or []:
        name, equals, value = item.partition("=")
        if not equals:
            raise OptionError(f"invalid --option {item!r}: expected Name=value")
        given.append((name.strip(), value.strip()))
    config = configure(Config(), given)
    raise typer.Exit(run_uci(sys.stdin, sys.stdout, config))
