"""pytest plugin for hloscope (registered through the ``pytest11`` entry point)."""
