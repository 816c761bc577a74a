"""The outputs of `diffimax repertoire`: the PGN chapters and the offline explorer page."""
