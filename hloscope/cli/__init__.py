"""Command-line interface: ``main(argv) -> int``."""

from hloscope.cli.main import main

__all__ = ["main"]
