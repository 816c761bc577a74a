"""Where `pipeline/cli/play.py` imports the UCI server's entry points from, until it imports them
from `pipeline.play`: the server is `pipeline.play.uci_server`, its options `pipeline.play.options`.
Nothing else imports this module; delete it when the command line no longer does."""

from pipeline.play.options import Config, OptionError, configure, option_table
from pipeline.play.uci_server import run_uci

__all__ = ["Config", "OptionError", "configure", "option_table", "run_uci"]
