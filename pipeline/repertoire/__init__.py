"""`diffimax repertoire`: the opening lines that give a player the best practical chances against
humans of a chosen rating (docs/repertoire.md)."""
