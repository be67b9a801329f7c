"""The device memory XLA plans for: the target's HBM (or an override) and the allocator's share of it.

:func:`with_memory` replaces the target's HBM size (XLA reads it from the compile-only topology's
GpuTargetConfig); :func:`allocator_bytes` is what JAX's allocator takes at a memory fraction, and
:func:`build_device_memory_size` hands it to XLA as jaxlib does on a GPU, by setting the field in
the serialized ``CompileOptions`` (:func:`with_device_memory_size`: the Python binding does not
expose it) of every compile in this thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Any

from hloscope.compile.seam import jaxcompat
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import Target, memory_fraction_problem


def with_memory(target: Target, memory_override_bytes: int | None) -> Target:
    """``target`` with its HBM size replaced by ``memory_override_bytes`` (when given).

    XLA reads the HBM size from the GpuTargetConfig of the compile-only topology
    (``device_memory_size``); the scheduler's memory limit is derived from it.
    """
    if memory_override_bytes is None:
        return target
    if memory_override_bytes <= 0:
        raise HloscopeError(f"device memory override must be positive, got {memory_override_bytes} bytes",
                            EXIT_BAD_INPUT)
    return dataclasses.replace(target, device_memory_size=int(memory_override_bytes))


def allocator_bytes(target: Target, memory_fraction: float | None) -> int | None:
    """What JAX's GPU allocator takes of ``target``'s HBM at ``memory_fraction`` (None: no fraction).

    jaxlib (``PyClient::CompileAndLoadIfrtProgram``) sets the executable's device memory size
    to the allocator's ``bytes_limit``, which the BFC allocator puts at the HBM times the
    fraction; XLA's GPU scheduler then takes that as its base instead of 80% of the HBM
    (``GetSchedulerMemoryLimit`` in ``gpu_hlo_schedule.cc``).
    """
    if memory_fraction is None:
        return None
    problem = memory_fraction_problem(memory_fraction)
    if problem:
        raise HloscopeError(f"memory fraction {problem}", EXIT_BAD_INPUT)
    return int(target.device_memory_size * memory_fraction)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def with_device_memory_size(options: Any, nbytes: int) -> Any:
    """``options`` (an ``xla_client.CompileOptions``) with its executable build options'
    ``device_memory_size`` set to ``nbytes``.

    The Python binding does not expose that field, so it is set on the serialized proto:
    ``CompileOptionsProto.executable_build_options`` is field 3 and
    ``ExecutableBuildOptionsProto.device_memory_size`` field 15 (``xla/pjrt/proto/
    compile_options.proto``); an embedded message that appears twice is merged.
    """
    inner = b"\x78" + _varint(nbytes)  # field 15, varint
    return type(options).ParseFromString(options.SerializeAsString() + b"\x1a" + _varint(len(inner)) + inner)


#: The device memory size the compile running in this thread (or context) gives XLA; None: none.
_DEVICE_MEMORY_SIZE: contextvars.ContextVar[int | None] = contextvars.ContextVar("hloscope_device_memory_size",
                                                                                 default=None)



def _with_this_threads_size(options: Any) -> Any:
    nbytes = _DEVICE_MEMORY_SIZE.get()
    return options if nbytes is None else with_device_memory_size(options, nbytes)


@contextlib.contextmanager
def build_device_memory_size(nbytes: int | None) -> Iterator[None]:
    """While compiling in this thread, give XLA ``nbytes`` as the device memory size, as jaxlib
    does on a GPU from its allocator's limit (compile-only devices have no allocator, so jaxlib
    sets none)."""
    if nbytes is None:
        yield
        return
    # Once per process: compiles in other threads, and later ones, get JAX's options unchanged.
    jaxcompat.wrap_compile_options(_with_this_threads_size)
    token = _DEVICE_MEMORY_SIZE.set(nbytes)
    try:
        yield
    finally:
        _DEVICE_MEMORY_SIZE.reset(token)
