"""Deviceless compilation for GPU targets. The only layer that imports JAX (lazily)."""
