"""Versioned Arrow schemas of the trap dataset, and the DuckDB views over it (`*.sql`)."""
