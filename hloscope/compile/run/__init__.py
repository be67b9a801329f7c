"""One compile request end to end: ``jobs`` (in its own process, then analyzed), ``devices`` (the
device count checked before JAX starts), ``artifacts`` (the artifact folder, written atomically)."""
