"""``python -m ragstrata``: the same command line as ``ragstrata``."""

from ragstrata.cli import main

if __name__ == "__main__":
    main()
