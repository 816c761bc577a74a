"""`diffimax human train`'s core: the trainer the configuration names.

- ``local`` (`pipeline.human.train`): examples gathered in this process (features extracted on
  Ray workers when `workers > 1`), LightGBM or the linear model fitted here;
- ``ray`` (`pipeline.human.scale`): dump scale, shards streamed to Ray tasks, the fit on Ray
  Train; the same model file.

Kept apart from both so that neither imports the other (the ray trainer reuses the local one's
parts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.common.progress import Progress
from pipeline.human.scale import train_on_ray
from pipeline.human.train import TrainConfig, TrainError, train_locally


def train(
    data: Sequence[str],
    out: str,
    config: TrainConfig | None = None,
    progress: Progress | None = None,
    dump: str | None = None,
) -> dict[str, Any]:
    """Train a model on the `train` games of `data`, write it to `out`; returns its description.
    `dump` (the local trainer only) names a directory to save the extracted examples in."""
    config = config or TrainConfig()
    shown = progress or Progress.quiet()
    if config.trainer == "ray":
        if dump is not None:
            raise TrainError("--dump-examples needs the local trainer: the ray trainer never gathers the examples")
        return train_on_ray(data, out, config, shown)
    return train_locally(data, out, config, shown, dump)
