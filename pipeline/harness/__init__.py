"""Measuring the judges: held-out games, known traps, and how verdicts agree with human play."""
