"""``python -m ragstrata.cli``: the same as the ``ragstrata`` console script."""

from ragstrata.cli import main

main()
