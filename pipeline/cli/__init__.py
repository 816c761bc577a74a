"""The `diffimax` command line: thin typer commands over typed core functions.

A domain error (bad tree, bad FEN, impossible setting, missing engine) becomes one line on
stderr and exit code 1, never a traceback (`app.main`). The flags several commands share are
declared once (`options`); each module holds the commands of one part of the project, and they
are registered here, in the order `diffimax --help` lists them.
"""

from __future__ import annotations

from pipeline.cli import analysis, datasets, evaluate, jobs, limits, play, repertoire
from pipeline.cli.app import INTERNAL_ERROR, app, main
from pipeline.cli.human import human_app
from pipeline.cli.jobs import mine_config

app.add_typer(human_app, name="human")
for _command in (
    analysis.tree,
    analysis.explain,
    jobs.mine,
    jobs.evals,
    datasets.query,
    datasets.verify,
    datasets.report,
    datasets.puzzles,
    datasets.tag,
    evaluate.evaluate,
    analysis.prototype,
    play.play,
    repertoire.repertoire,
    repertoire.repertoire_query,
):
    app.command()(_command)
limits.guard_commands(app)  # every numeric flag checked against what it feeds, before any work

__all__ = ["INTERNAL_ERROR", "app", "main", "mine_config"]
