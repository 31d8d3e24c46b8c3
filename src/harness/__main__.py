"""``python -m harness``: the command line."""

from harness.cli import main

main()
