"""The JAX seam of the compile layer: every call into JAX and XLA that no platform owns.

``jaxcompat`` (what differs between JAX versions, and every private part of JAX used; ``remat_bind``
beside it), ``environment`` (the process set-up before JAX starts), ``xla_options`` (``--xla-flag``
text and XLA's dump folder), and what is read from a traced step: ``intent`` (the offload it asked
for), ``names`` (the user's tensor names), ``userfn`` (the user's step and its abstract arguments),
``policy_override`` (per-name checkpoint switches).
"""
