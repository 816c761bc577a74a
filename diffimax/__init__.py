"""diffimax for notebooks and scripts (docs/api.md):

    import diffimax
    ds = diffimax.open("runs/jan")                  # a directory, s3:// or gs://
    ds.saved("practical-traps").df()                # a saved query as a pandas DataFrame
    ds.sql("select * from traps limit 10").df()     # any SQL over the views
    e = diffimax.explain("1.e4 e5 2.Bc4 Nc6 3.Qh5", rating=1200)
    e.judgement.fall.fall_p                         # how likely a 1200 player goes wrong here
    diffimax.mine(["games.pgn"], "runs/mine", max_games=100)

The functions are `pipeline.api`'s, which the commands call.
"""

from pipeline.api import explain, job, mine, open
from pipeline.dataset.queries import Dataset
from pipeline.mine.config import MineConfig
from pipeline.outputs.explain import Explanation

__all__ = ["Dataset", "Explanation", "MineConfig", "explain", "job", "mine", "open"]
