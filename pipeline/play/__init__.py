"""`diffimax play`: a UCI engine that sets traps (style trap), loses plausibly (style tutor) or plays
the backend's best move (style best).

- `pipeline.play.styles`: the styles and their settings;
- `pipeline.play.choice`: the records of one decision (situation, control, choice, the tutor's
  state) and the value arithmetic the styles share;
- `pipeline.play.decision`, `pipeline.play.trap`, `pipeline.play.tutor`: each style's move choice
  (best, trap, tutor) on a `search.backend.Backend`, the human-move model and the corpus;
- `pipeline.play.player`: the `Player` that runs the styles in stages, and the instant move;
- `pipeline.play.uci_options`, `pipeline.play.clock`: the UCI options, and time management;
- `pipeline.play.uci_server`: the UCI protocol loop over stdin/stdout (the engine side of UCI; the
  client side is `pipeline.engines.uci`).

docs/play.md describes the styles and the options; docs/results/play.md the measured games.
"""

from pipeline.play.player import Player
from pipeline.play.styles import PlaySettings, TutorSettings
from pipeline.play.uci_options import Config, OptionError, configure, option_table
from pipeline.play.uci_server import run_uci

__all__ = [
    "Config",
    "OptionError",
    "PlaySettings",
    "Player",
    "TutorSettings",
    "configure",
    "option_table",
    "run_uci",
]
