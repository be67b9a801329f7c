"""``python -m hloscope.cli``."""

from hloscope.cli.main import entry

entry()
