"""What every layer of the pipeline shares, with no layer of its own: starting Ray (`cluster`),
the fixed split of the shared games and the sampling hash (`splits`), the statistics rates are
reported with (`stats`), and making strangers' text safe (`sanitize`). Imports nothing of
`pipeline` above it, only `search/`."""
