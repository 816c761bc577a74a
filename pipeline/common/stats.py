"""The statistics the project reports rates with."""

from __future__ import annotations

import math

# The normal quantile of a 95 % interval.
Z95 = 1.96


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials, clamped to contain k / n (0, 0 when n
    is 0). The same formula as the `wilson_low` / `wilson_high` macros of schemas/views.sql."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))
