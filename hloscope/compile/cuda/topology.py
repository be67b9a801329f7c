"""The compile-only GPU topology of a target: how its GPUs are wired, as XLA's CUDA plugin takes it.

``jax.experimental.topologies.get_topology_desc(platform="cuda", topology=...)`` accepts
exactly ``"<partitions>x<hosts per partition>x<GPUs per host>"`` (anything else is
``INTERNAL: topology must be of shape ...``, measured with jaxlib 0.10.2). A
*partition* is a fast-interconnect (NVLink) domain; hosts inside one share it, and
partitions talk over the network. Each target says how many GPUs one host holds
(``Target.gpus_per_host``) and how many hosts one NVLink domain spans
(``Target.hosts_per_nvlink_domain``); :func:`topology_for` turns a device count into
the topology string with the fewest partitions that fits. docs/targets.md lists the
choice per target and what it changes in XLA (measured: nothing in the speed-of-light
estimator's collective times, which take the node size from its own per-GPU config).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hloscope.compile.seam import environment
from hloscope.compile.seam.jaxcompat import register_cuda_plugin_late
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_OUT_OF_MEMORY, HloscopeError
from hloscope.targets import Target, gpu_only

if TYPE_CHECKING:
    from jax import Device
    from jax.experimental.topologies import TopologyDescription

#: What XLA's GPU plugin logs: the scheduler and estimator it built (gpu_hlo_schedule,
#: sol_gpu_cost_model: read by hloscope.compile.cuda.scheduler); a few lines per compile.
PLUGIN_LOG_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "0",
    "TF_CPP_VMODULE": "gpu_hlo_schedule=10,sol_gpu_cost_model=10",
}
#: In hloscope's own worker processes (every compile there is captured) also the
#: estimator's per-op costs and LHS's statistics (sol_latency_estimator,
#: latency_hiding_scheduler: read by hloscope.hlo.xla_log; about 1 MB for llama-tiny).
WORKER_LOG_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "0",
    "TF_CPP_VMODULE": "gpu_hlo_schedule=10,sol_gpu_cost_model=10,sol_latency_estimator=10,latency_hiding_scheduler=1",
}


@dataclass(frozen=True)
class Topology:
    """A compile-only topology: ``partitions`` NVLink domains of ``hosts`` hosts of ``per_host`` GPUs."""

    partitions: int
    hosts: int
    per_host: int

    @property
    def name(self) -> str:
        """The string ``get_topology_desc`` takes."""
        return f"{self.partitions}x{self.hosts}x{self.per_host}"

    @property
    def devices(self) -> int:
        return self.partitions * self.hosts * self.per_host

    def describe(self) -> str:
        """``2 NVLink domains x 16 hosts x 4 GPUs`` (for manifests and messages)."""
        return (f"{self.partitions} NVLink domain{'s' if self.partitions != 1 else ''} x {self.hosts} "
                f"host{'s' if self.hosts != 1 else ''} x {self.per_host} GPU{'s' if self.per_host != 1 else ''}")


def topology_for(target: Target, devices: int, argument: str = "--devices") -> Topology:
    """The topology of ``devices`` GPUs of ``target`` wired as the target's systems are.

    Up to ``gpus_per_host`` GPUs sit in one host (``1x1xN``). More must fill whole hosts;
    hosts are grouped into as few NVLink domains of at most ``hosts_per_nvlink_domain``
    hosts as divide them evenly (128 GB200s: 2 domains of 16 hosts of 4 GPUs; 128 H100s:
    16 domains of one 8-GPU host each).
    """
    if devices < 1:
        raise HloscopeError(f"{argument} must be at least 1, got {devices}", EXIT_BAD_INPUT)
    target = gpu_only(target)
    per_host = target.gpus_per_host
    if devices <= per_host:
        return Topology(1, 1, devices)
    if devices % per_host:
        raise HloscopeError(f"{argument} above {per_host} must be a multiple of {per_host} for {target.name} "
                            f"({per_host} GPUs per host), got {devices}", EXIT_BAD_INPUT)
    hosts = devices // per_host
    domain = target.hosts_per_nvlink_domain
    partitions = next(p for p in range(1, hosts + 1) if hosts % p == 0 and hosts // p <= domain)
    return Topology(partitions, hosts // partitions, per_host)


@contextmanager
def _plugin_logging() -> Iterator[None]:
    """Turn on the plugin's log lines for the plugin's first use, then put the environment
    back. The plugin reads these variables once, when its logging starts (at its first
    topology); the jax CPU backend already started keeps its own settings."""
    # The plugin keeps these settings for the process's life: in the user's own process its
    # compiles outside hloscope would print them, so there only the few decision lines.
    env = WORKER_LOG_ENVIRONMENT if multiprocessing.parent_process() is not None else PLUGIN_LOG_ENVIRONMENT
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_DEVICES: dict[tuple[str, str], list[Device]] = {}


def _topology_desc(target: Target, topo: Topology, retry: bool) -> TopologyDescription:
    """The plugin's compile-only topology; when jax's backends started without the plugin (a
    computation ran first: ``jaxcompat.register_cuda_plugin_late``), it is registered once more."""
    # lazy: jax is slow to import; only when tracing or compiling
    from jax.experimental import topologies


    try:
        with environment.quiet_native_stderr(), _plugin_logging():
            return topologies.get_topology_desc(platform="cuda", topology_name="",
                                                target_config=gpu_only(target).gpu_target_config(),
                                                topology=topo.name)
    except Exception as e:
        if "topology not implemented" in str(e):
            why = register_cuda_plugin_late() if retry else ""
            if why is None:
                return _topology_desc(target, topo, retry=False)
            raise _plugin_failure(why) from None
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise HloscopeError(f"cannot build a compile-only topology {topo.name} for {target.name}: {first}",
                            EXIT_ENVIRONMENT) from None


def _plugin_failure(why: str) -> HloscopeError:
    """The one line for a CUDA plugin that is not registered: its library could not be mapped under
    an address-space limit (host memory, exit 6), it failed to load (the environment, exit 7),
    or jax's backends started without it (exit 7)."""
    limit = environment.address_space_limit()
    if limit is not None and any(w in why.lower() for w in environment.OUT_OF_MAPPABLE_MEMORY):
        return HloscopeError(f"the CUDA plugin could not be loaded under an address-space limit of "
                             f"{limit / 2**30:.1f} GiB (ulimit -v): it ran out of the memory it may map [{why}]",
                             EXIT_OUT_OF_MEMORY)
    if why and "already" not in why.lower():
        return HloscopeError(f"the CUDA plugin failed to load, so no compile-only GPU exists: {why}",
                             EXIT_ENVIRONMENT)
    return HloscopeError(environment.STARTED_TOO_EARLY, EXIT_ENVIRONMENT)


def compile_only_devices(target: Target, devices: int) -> list[Device]:
    """``devices`` compile-only GPUs of ``target`` (the CUDA plugin's), in id order; cached."""
    environment.prepare()
    topo = topology_for(target, devices)
    key = (gpu_only(target).gpu_target_config(), topo.name)
    if key not in _DEVICES:
        _DEVICES[key] = list(_topology_desc(target, topo, retry=True).devices)
    return _DEVICES[key][:devices]
