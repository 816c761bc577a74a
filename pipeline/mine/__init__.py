"""The mining job: a Ray driver (`driver`) over plain per-position work (`work`)."""
