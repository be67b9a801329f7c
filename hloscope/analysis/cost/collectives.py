"""Collective time by algorithm and topology: a ring over the group, on NVLink or the network.

``collective_time_us(kind, nbytes, group, target)`` prices one execution of a collective
whose participants are the device ids ``group`` (the first replica group: every group of
one op has the same size and, in SPMD, the same wiring):

- the algorithm is a ring (NCCL's default for large messages): of the ``N`` GPUs each
  sends and receives ``(N-1)/N`` of the full buffer for an all-gather, a reduce-scatter
  or an all-to-all, twice that for an all-reduce (reduce-scatter then all-gather), and
  the whole buffer once for a collective-permute;
- the bandwidth is the target's NVLink figure per direction (``interconnect_bandwidth``)
  when every participant sits in one NVLink domain, else the network's: each GPU has
  its own NIC (``network_bandwidth``) and NCCL runs one ring per NIC (a channel), each
  ring leaving and entering an NVLink domain once, so the ``k`` members of the group in
  one NVLink domain move their data through ``k`` NICs at once (``k * network_bandwidth``;
  XLA's SOL model, ``SolGPUCostModel::RingLatency``, divides by the GPUs per node the
  same way). ``k`` is at most NCCL's channel limit (:data:`NCCL_MAX_CHANNELS`), and the
  rings' hops inside the domain still run on NVLink, so the figure is at most
  ``interconnect_bandwidth``. The domain, not the host, is what a ring crosses: the four
  GPUs of a GB200 tray reach the other 68 of their NVL72 rack over NVLink, and NCCL
  treats the rack as one node. NVLink domains are those of the compile-only topology
  (:func:`nvlink_domain_size`, as ``hloscope.compile.cuda.topology.topology_for`` lays out
  the step's devices): 8 GPUs of an HGX node, 64 of 128 GB200s;
- latency: one collective kernel launch (``collective_launch_us``) plus one ring step
  (``nvlink_hop_us`` or ``network_hop_us``) per step: ``N-1`` steps, ``2(N-1)`` for an
  all-reduce, one for a collective-permute.

``nbytes`` is the full buffer: the result of an all-gather, the operand (the result times
``N``) of a reduce-scatter, the buffer of an all-reduce or all-to-all, what a
collective-permute sends. A group of one moves nothing and costs the launch only.

``replica_groups(attr_text, num_partitions)`` reads the first group from the three forms
XLA prints: explicit (``{{0,1},{2,3}}``), iota (``[2,4]<=[8]``, ``[4,2]<=[2,4]T(1,0)``) and
mesh (``mesh['axis_0'=8,'axis_1'=1] {'axis_0'}``); empty groups mean every device.
"""

from __future__ import annotations

import re

from hloscope.targets import GpuTarget

__all__ = ["NCCL_MAX_CHANNELS", "collective_time_us", "first_replica_group", "nvlink_domain_size", "ring_steps",
           "ring_traffic"]

#: NCCL's compile-time limit on channels (rings) per communicator (``MAXCHANNELS`` in NCCL's
#: ``src/include/device.h``, 32 in the 2.x releases): no more NICs than that carry one ring collective.
NCCL_MAX_CHANNELS = 32

_EXPLICIT = re.compile(r"replica_groups=\{(\{[^}]*\}(?:,\{[^}]*\})*)?\}")
_IOTA = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH = re.compile(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}")
_MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")
_PAIRS = re.compile(r"source_target_pairs=\{\{(\d+),(\d+)\}")


def _iota_ids(dims: list[int], perm: list[int] | None, count: int) -> list[int]:
    """The first ``count`` flattened ids of ``iota(prod(dims))`` reshaped to ``dims`` and transposed
    by ``perm`` (the first replica group: only those are made, whatever the module's size)."""
    total = 1
    for d in dims:
        total *= d
    count = min(count, total)
    if perm is None:
        return list(range(count))
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    tdims = [dims[p] for p in perm]
    out = []
    idx = [0] * len(tdims)
    for _ in range(count):
        out.append(sum(idx[k] * strides[perm[k]] for k in range(len(tdims))))
        for k in range(len(tdims) - 1, -1, -1):
            idx[k] += 1
            if idx[k] < tdims[k]:
                break
            idx[k] = 0
    return out


def first_replica_group(attr_text: str, num_partitions: int) -> tuple[int, ...]:
    """The device ids of an op's first replica group (every device when the op names none)."""
    m = _MESH.search(attr_text)
    if m is not None:
        axes = [(name, int(size)) for name, size in _MESH_AXIS.findall(m.group(1))]
        chosen = {a.strip().strip("'") for a in m.group(2).split(",") if a.strip()}
        stride = 1
        ids = [0]
        for name, size in reversed(axes):
            if name in chosen:
                ids = [base + i * stride for i in range(size) for base in ids]
            stride *= size
        return tuple(sorted(ids))
    m = _IOTA.search(attr_text)
    if m is not None:
        size = int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        perm = [int(p) for p in m.group(4).split(",")] if m.group(4) else None
        return tuple(_iota_ids(dims, perm, size))
    m = _EXPLICIT.search(attr_text)
    if m is not None and m.group(1):
        first = m.group(1)[1:m.group(1).index("}")]
        return tuple(int(x) for x in first.split(",") if x.strip())
    m = _PAIRS.search(attr_text)
    if m is not None:
        return (int(m.group(1)), int(m.group(2)))
    return tuple(range(max(1, num_partitions)))


def ring_traffic(kind: str, nbytes: int, n: int) -> float:
    """Bytes each GPU sends (and receives) in a ring collective over ``n`` GPUs."""
    if n <= 1:
        return 0.0
    if kind == "collective-permute" or kind in ("send", "recv"):
        return float(nbytes)
    share = (n - 1) / n * nbytes
    return 2 * share if kind == "all-reduce" else share


def ring_steps(kind: str, n: int) -> int:
    """Latency-bound steps of a ring collective over ``n`` GPUs."""
    if n <= 1:
        return 0
    if kind == "collective-permute" or kind in ("send", "recv"):
        return 1
    return 2 * (n - 1) if kind == "all-reduce" else n - 1


def nvlink_domain_size(target: GpuTarget, devices: int) -> int:
    """GPUs per NVLink domain when ``devices`` GPUs of ``target`` are laid out as the compile-only
    topology lays them out: whole hosts of ``gpus_per_host``, in as few domains of at most
    ``hosts_per_nvlink_domain`` hosts as divide the hosts evenly (device ids domain by domain)."""
    per_host = max(1, target.gpus_per_host)
    if devices <= per_host or devices % per_host:
        return max(1, devices) if devices <= per_host else per_host * target.hosts_per_nvlink_domain
    hosts = devices // per_host
    limit = max(1, target.hosts_per_nvlink_domain)
    partitions = next(p for p in range(1, hosts + 1) if hosts % p == 0 and hosts // p <= limit)
    return hosts // partitions * per_host


def collective_time_us(kind: str, nbytes: int, group: tuple[int, ...], target: GpuTarget, devices: int = 0) -> float:
    """One execution of a collective of ``kind`` moving a ``nbytes`` buffer among ``group`` (µs);
    ``devices``: the step's device count (its topology), default the group's extent. A
    calibrated target's measured figure for ``kind`` (``Target.collective_figure``) replaces the
    ring's bandwidth and latency: its latency plus the ring traffic at its bandwidth."""
    n = len(group)
    measured = target.collective_figure(kind)
    if measured is not None:
        bw, latency = measured
        return latency + ring_traffic(kind, nbytes, n) / bw * 1e6
    domain = nvlink_domain_size(target, devices or (max(group, default=0) + 1))
    inside = len({d // domain for d in group}) <= 1
    if inside:
        bw, hop = target.interconnect_bandwidth, target.nvlink_hop_us
    else:
        first_domain = group[0] // domain
        nics = min(NCCL_MAX_CHANNELS, sum(1 for d in group if d // domain == first_domain))
        bw, hop = min(target.interconnect_bandwidth, target.network_bandwidth * nics), target.network_hop_us
    return target.collective_launch_us + ring_steps(kind, n) * hop + ring_traffic(kind, nbytes, n) / bw * 1e6
