"""Measured profiles beside the model: reading them, the comparison, XLA's estimates by op class, the
fit of a target."""
