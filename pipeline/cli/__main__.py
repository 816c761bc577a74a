"""`python -m pipeline.cli`: the `diffimax` command."""

from pipeline.cli import main

if __name__ == "__main__":
    main()
