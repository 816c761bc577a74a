"""`diffimax play`: a UCI engine that sets traps (style trap), loses plausibly (style tutor) or plays
the backend's best move (style best).

- `pipeline.play.player`: the move choice — styles, their settings, the tutor's ε adaptation, the
  seeded randomness — on a `search.backend.Backend`, the human-move model and the corpus;
- `pipeline.play.uci`: the UCI protocol loop over stdin/stdout, its options and time management.

docs/play.md describes the styles, the options and the measured games.
"""
