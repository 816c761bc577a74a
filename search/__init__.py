"""DiffiMax search core: minimax, alpha-beta and trap analysis over a small game interface.

Pure by design: no Ray, no DuckDB, no file I/O. Everything here is a function of its
arguments, so the pipeline can run it anywhere and the tests can check it exhaustively.
"""
