"""`diffimax play`: the UCI engine on stdin and stdout."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from pipeline.cli.options import (
    EngineDepthOpt,
    EngineOpt,
    HashOpt,
    HumanCorpusOpt,
    HumanModelOpt,
    NodesOpt,
    RatingOpt,
    SafetyMargin,
    SeedOpt,
    ShallowDepthOpt,
    ThreadsOpt,
)


def play(
    style: Annotated[str | None, typer.Option("--style", help="trap, tutor or best (UCI option Style).")] = None,
    engine: EngineOpt = None,
    nodes: NodesOpt = None,
    engine_depth: EngineDepthOpt = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    shallow_depth: ShallowDepthOpt = None,
    seed: SeedOpt = 0,
    human_model: HumanModelOpt = "default",
    human_corpus: HumanCorpusOpt = None,
    safety_margin: SafetyMargin = "0.5",
    opponent_rating: RatingOpt = None,  # UCI option Opponent Rating
    tutor_rating: Annotated[
        int | None, typer.Option("--tutor-rating", help="The rating the tutor imitates (Tutor Rating).")
    ] = None,
    epsilon: Annotated[str | None, typer.Option("--epsilon", help="The tutor's starting epsilon (Epsilon).")] = None,
    temperature: Annotated[
        str | None, typer.Option("--temperature", help="The tutor's temperature, centipawns (Temperature).")
    ] = None,
    move_overhead: Annotated[
        int | None, typer.Option("--move-overhead", help="Milliseconds kept back from the clock (Move Overhead).")
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", help="Any UCI option as 'Name=value' (repeatable); --list-options names them."),
    ] = None,
    list_options: Annotated[bool, typer.Option("--list-options", help="List the UCI options and exit.")] = False,
) -> None:
    """Run the UCI engine on stdin/stdout: it sets traps (style trap), loses plausibly (tutor) or
    plays the backend's best move (best). Every flag is also a UCI option (docs/play.md,
    --list-options), with the meaning and default it has on every other command."""
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
            ("Engine Depth", engine_depth),
            ("Threads", threads),
            ("Hash", hash_mb),
            ("Shallow Depth", shallow_depth),
            ("Seed", seed),
            ("Human Model", human_model),
            ("Human Corpus", human_corpus),
            ("Safety Margin", safety_margin),
            ("Opponent Rating", opponent_rating),
            ("Tutor Rating", tutor_rating),
            ("Epsilon", epsilon),
            ("Temperature", temperature),
            ("Move Overhead", move_overhead),
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
