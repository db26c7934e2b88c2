"""``python -m harness.cli``: the same as the ``chunkbench`` command."""

from harness.cli import main

main()
