"""Evaluations a user brings: Lichess's evaluation export (`pipeline.evals.export`), converted to
Parquet, and read by a mining job's workers in place of root searches (`pipeline.evals.cache`)."""
