"""The tuner's search over per-name ``remat | device | offload`` choices, without compiling.

No JAX, no compiles: ``hloscope.compile.search.tune`` compiles what this module proposes and hands
back :class:`Verified` points. docs/tune.md states the design; in short:

- :class:`Space`: the names (each with the choices it may take) and the per-device batch sizes.
- :class:`ProposalModel`: additive per-name deltas over the all-``remat`` step of each batch.
  A configuration's device bytes, host bytes and simulated step are
  ``base[batch] + (batch / batch0) * sum over names of delta[name, choice]`` (``remat``: 0).
  The prior comes from three probe compiles at the first batch (all remat, all device, all
  offload): the device-bytes and step differences between them are shared out over the names
  in proportion to the bytes each name sends to the host in the all-offload probe (its
  residual's size), and each name's offload delta adds the exposed transfer time the
  analysis measured for that name. Every verified compile refits the deltas (ridge
  regression towards the prior), so the model learns where additivity fails.
- :func:`propose`: the unverified configurations the model ranks first (predicted to fit,
  best objective first), and the best-ranked single change of the best verified point.
- :func:`frontier`: the verified points that fit, Pareto-optimal in device bytes against the
  objective. :func:`explain`: why the best beats its verified neighbours.
- :func:`model_error`: what the model predicted for each proposal before it was compiled,
  against the compile.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from hloscope.analysis.intent.model import AskKind
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.request import CompileRequest

if TYPE_CHECKING:
    from hloscope.analysis.intent.outcome import IntentAccount

#: What a tagged name can become, in the order the search prefers on a tie.
CHOICES = ("remat", "device", "offload")

#: The probes, in compile order: each a uniform configuration (every free name the same choice).
PROBES = ("remat", "device", "offload")

#: The probe added when pipelined host offloading is searched: every free name offloaded, pipelining off.
UNPIPELINED_PROBE = "offload-unpipelined"

#: Enumerate every configuration up to this many; beyond it, search locally from the verified points.
ENUMERATE_UP_TO = 200_000


class Objective(StrEnum):
    """``step``: the simulated step at one batch, lower is better. ``throughput``: tokens per
    second per device (samples when the workload has no sequence length), higher is better.
    ``call``: the call at one batch, the simulated step plus the host work the runtime adds to every
    call (``hloscope.analysis.host_call``: mapping the step's new pinned-host outputs), lower is better;
    proposals are ranked by their predicted step, the host work being the same for every choice at one
    batch (the step's outputs, not its activations, decide it)."""

    STEP = "step"
    THROUGHPUT = "throughput"
    CALL = "call"


@dataclass(frozen=True, order=True)
class Config:
    """One point of the space: the choice of each name (in the space's name order), the
    per-device batch (None: the workload's own) and pipelined host offloading (None: the
    search's one setting, when it is not an axis)."""

    choices: tuple[str, ...]
    batch: int | None = None
    pipelined: bool | None = None


@dataclass(frozen=True)
class Space:
    """names: the names searched, in order; allowed: per name, the choices it may take (a name the
    user fixed has one); batches: the per-device batch sizes (``(None,)``: the workload's own);
    pipelined: the pipelined host offloading settings searched (``(None,)``: not an axis, every
    compile takes the search's one setting; ``(True, False)``: on, the probes' setting, and off)."""

    names: tuple[str, ...]
    allowed: tuple[tuple[str, ...], ...]
    batches: tuple[int | None, ...] = (None,)
    pipelined: tuple[bool | None, ...] = (None,)

    @property
    def searches_pipelining(self) -> bool:
        return len(self.pipelined) > 1

    def size(self) -> int:
        n = len(self.batches) * len(self.pipelined)
        for a in self.allowed:
            n *= len(a)
        return n

    def configs(self) -> Iterator[Config]:
        for b in self.batches:
            for pipe in self.pipelined:
                for choices in itertools.product(*self.allowed):
                    yield Config(tuple(choices), b, pipe)

    def uniform(self, choice: str, batch: int | None, pipelined: bool | None = None) -> Config:
        """Every name that may take ``choice`` takes it; the others keep their first allowed choice.
        ``pipelined``: None is the first setting of the space's."""
        return Config(tuple(choice if choice in a else a[0] for a in self.allowed), batch,
                      self.pipelined[0] if pipelined is None else pipelined)

    def neighbours(self, c: Config) -> list[Config]:
        """The configurations one change away: one name's choice, the next batch size up or down, or
        pipelining switched."""
        out = [Config((*c.choices[:i], x, *c.choices[i + 1:]), c.batch, c.pipelined)
               for i, a in enumerate(self.allowed) for x in a if x != c.choices[i]]
        if c.batch in self.batches:
            i = self.batches.index(c.batch)
            out += [Config(c.choices, self.batches[j], c.pipelined) for j in (i - 1, i + 1)
                    if 0 <= j < len(self.batches)]
        out += [Config(c.choices, c.batch, p) for p in self.pipelined if p != c.pipelined]
        return out

    def as_dict(self, c: Config) -> dict[str, str]:
        return dict(zip(self.names, c.choices, strict=True))


@dataclass(frozen=True)
class NameFacts:
    """What the analysis found for one name in a compile where it was offloaded, per step.

    to_host_bytes: bytes its transfers wrote to the host; transfer_us: their estimated link time;
    exposed_us: the part no work hid; window_us: the compute in their windows; transfers / hidden:
    how many transfers carry the name, and how many of them the schedule hid."""

    name: str
    to_host_bytes: int
    transfer_us: float
    exposed_us: float
    window_us: float
    transfers: int
    hidden: int


def name_facts(account: IntentAccount | None) -> tuple[NameFacts, ...]:
    """Each offloaded name's :class:`NameFacts`, from the step's intent accounting (none without one)."""
    if account is None:
        return ()
    out = []
    for a in account.items:
        if a.asked.kind is not AskKind.OFFLOAD_NAME:
            continue
        vs = a.transfers
        out.append(NameFacts(
            a.asked.what, a.bytes_per_step[Direction.TO_HOST],
            sum(v.est_transfer_us * v.transfer.executions for v in vs),
            sum(v.est_exposed_us * v.transfer.executions for v in vs),
            sum(v.est_compute_us * v.transfer.executions for v in vs),
            len(vs), sum(1 for v in vs if v.verdict is VerdictKind.HIDDEN)))
    return tuple(out)


@dataclass(frozen=True)
class Prediction:
    """What the model expects of a configuration: device bytes, host bytes, simulated step (µs)."""

    device_bytes: float
    host_bytes: float
    step_us: float


@dataclass(frozen=True)
class Verified:
    """One compiled configuration.

    probe: which probe it was (``remat``, ``device``, ``offload``), "" for a proposal. label: how
    progress lines and artifact folders name it. device_bytes: the device allocation; host_bytes:
    pinned-host bytes; step_us / exposed_us: the simulated step and its exposed transfer time.
    fits: the device allocation is within the limit (the compile's memory facts); host_fits: the
    host bytes are within the pinned-host pool. predicted: what the model said before the
    compile (None for a probe). names: per-name facts of the names it offloaded. error: why
    the compile failed ("" when it did not). cached / compile_s: from the cache, wall seconds.
    compile_args: the policy and settings it was compiled with, as ``hloscope compile`` options.
    """

    config: Config
    label: str
    probe: str = ""
    device_bytes: int = 0
    host_bytes: int = 0
    step_us: float = 0.0
    exposed_us: float = 0.0
    fits: bool = False
    host_fits: bool = False
    predicted: Prediction | None = None
    names: tuple[NameFacts, ...] = ()
    error: str = ""
    cached: bool = False
    compile_s: float = 0.0
    fingerprint: str = ""
    #: The ``hloscope compile`` options that compiled it (``--policy remat``; ``--set custom=...``).
    compile_args: tuple[str, ...] = ()
    #: XLA flags the step needs beside its policy to run as compiled (pipelined host offloading off).
    xla_flags: tuple[str, ...] = ()
    #: The host work the runtime adds to every call (µs; 0 with none, or where the target has no figure).
    call_host_us: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def meets(self) -> bool:
        """Compiled, fits in device memory and in the pinned-host pool."""
        return self.ok and self.fits and self.host_fits


@dataclass(frozen=True)
class Limits:
    """device_bytes: the HBM (or the allocator's share); host_bytes: the pinned-host pool."""

    device_bytes: int
    host_bytes: int


@dataclass(frozen=True)
class Goal:
    """objective; tokens_per_sample: the sequence length (1 when unknown); devices: the step's GPUs."""

    objective: Objective = Objective.STEP
    tokens_per_sample: int = 1
    devices: int = 1

    def throughput(self, batch: int | None, step_us: float) -> float:
        """Tokens (or samples) per second per device."""
        return (batch or 1) * self.tokens_per_sample / step_us * 1e6 if step_us > 0 else 0.0

    def cost(self, batch: int | None, step_us: float) -> float:
        """Lower is better: the step (or the call), or minus the throughput."""
        return -self.throughput(batch, step_us) if self.objective is Objective.THROUGHPUT else step_us

    def timed_us(self, v: Verified) -> float:
        """What the objective times of a verified point: its step, plus its per-call host work for ``call``."""
        return v.step_us + (v.call_host_us if self.objective is Objective.CALL else 0.0)


# ---- the proposal model -----------------------------------------------------------------------


_METRICS = ("device_bytes", "host_bytes", "step_us")


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting on a small symmetric positive definite system."""
    n = len(b)
    m = [[*row[:], b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        if abs(m[col][col]) < 1e-300:
            continue
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for k in range(col, n + 1):
                    m[r][k] -= f * m[col][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        if abs(m[r][r]) < 1e-300:
            continue
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


@dataclass(frozen=True)
class ProposalModel:
    """Additive per-name deltas over each batch's all-``remat`` step (module docstring).

    base: metric -> per batch (the space's order) the all-remat figure. delta: metric -> per name
    ``(device delta, offload delta)`` at the first batch, scaled by ``batch / batch0`` elsewhere.
    unpipelined: when the space searches pipelining, metric -> per name what offloading it with
    pipelining off adds to its offload delta (empty otherwise).
    """

    space: Space
    base: Mapping[str, tuple[float, ...]]
    delta: Mapping[str, tuple[tuple[float, float], ...]]
    unpipelined: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def _scale(self, batch: int | None) -> float:
        b0 = self.space.batches[0]
        return (batch / b0) if batch is not None and b0 else 1.0

    def features(self, c: Config) -> list[float]:
        """The row of ``c`` in the regression: a one-hot batch intercept, then per name its device and
        offload indicators, scaled by the batch."""
        s = self._scale(c.batch)
        row = [1.0 if b == c.batch else 0.0 for b in self.space.batches]
        for ch in c.choices:
            row += [s if ch == "device" else 0.0, s if ch == "offload" else 0.0]
        if self.space.searches_pipelining:
            row += [s if ch == "offload" and c.pipelined is False else 0.0 for ch in c.choices]
        return row

    def _theta(self, metric: str) -> list[float]:
        return [*self.base[metric], *(x for pair in self.delta[metric] for x in pair),
                *(self.unpipelined[metric] if self.space.searches_pipelining else ())]

    def predict(self, c: Config) -> Prediction:
        f = self.features(c)
        vals = [sum(a * b for a, b in zip(f, self._theta(m), strict=True)) for m in _METRICS]
        return Prediction(*vals)

    def refit(self, prior: ProposalModel, points: Sequence[Verified], strength: float = 0.1) -> ProposalModel:
        """The deltas that fit ``points`` best while staying near ``prior``'s (ridge regression:
        minimise sum of squared errors + ``strength`` * sum of squared departures, each metric
        in units of its largest base figure)."""
        pts = [p for p in points if p.ok]
        if not pts:
            return self
        base: dict[str, tuple[float, ...]] = {}
        delta: dict[str, tuple[tuple[float, float], ...]] = {}
        unpiped: dict[str, tuple[float, ...]] = {}
        nb, nn = len(self.space.batches), len(self.space.names)
        for m in _METRICS:
            t0 = prior._theta(m)
            unit = max((abs(x) for x in prior.base[m]), default=1.0) or 1.0
            rows = [self.features(p.config) for p in pts]
            ys = [float(getattr(p, m)) for p in pts]
            n = len(t0)
            ata = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
            resid = [(y - sum(a * b for a, b in zip(r, t0, strict=True))) / unit for r, y in zip(rows, ys, strict=True)]
            atb = [sum(r[i] * e for r, e in zip(rows, resid, strict=True)) for i in range(n)]
            for i in range(n):
                ata[i][i] += strength
            d = _solve(ata, atb)
            theta = [t + x * unit for t, x in zip(t0, d, strict=True)]
            base[m] = tuple(theta[:nb])
            delta[m] = tuple((theta[nb + 2 * i], theta[nb + 2 * i + 1]) for i in range(nn))
            if self.space.searches_pipelining:
                unpiped[m] = tuple(theta[nb + 2 * nn:])
        return ProposalModel(self.space, base, delta, unpiped)


def prior_model(space: Space, probes: Mapping[tuple[str, int | None], Verified]) -> ProposalModel | None:
    """The model the probes give (``(probe, batch) -> Verified``); None when a probe of the first
    batch failed (remat, device and offload all needed; with pipelining searched, the
    all-offload probe with pipelining off too)."""
    b0 = space.batches[0]
    r, d, o = (probes.get((p, b0)) for p in PROBES)
    if r is None or d is None or o is None or not (r.ok and d.ok and o.ok):
        return None
    u = probes.get((UNPIPELINED_PROBE, b0))
    if space.searches_pipelining and (u is None or not u.ok):
        return None
    by_name = {f.name: f for f in o.names}
    free = [i for i, a in enumerate(space.allowed) if len(a) > 1]
    weights = [float(by_name[n].to_host_bytes) if n in by_name and i in free else 0.0
               for i, n in enumerate(space.names)]
    if not sum(weights):  # no transfer named: share equally among the free names
        weights = [1.0 if i in free else 0.0 for i in range(len(space.names))]
    total = sum(weights) or 1.0
    w = [x / total for x in weights]
    exposed = [by_name[n].exposed_us if n in by_name else 0.0 for n in space.names]
    host = [float(by_name[n].to_host_bytes) if n in by_name else 0.0 for n in space.names]
    rest_host = o.host_bytes - sum(host)
    save_step = d.step_us - r.step_us
    rest_step = (o.step_us - d.step_us) - sum(exposed)
    delta = {
        "device_bytes": tuple((wi * (d.device_bytes - r.device_bytes), wi * (o.device_bytes - r.device_bytes))
                              for wi in w),
        "host_bytes": tuple((0.0, hi + wi * rest_host) for wi, hi in zip(w, host, strict=True)),
        "step_us": tuple((wi * save_step, wi * save_step + xi + wi * rest_step)
                         for wi, xi in zip(w, exposed, strict=True)),
    }
    base = {m: tuple(float(getattr(probes[("remat", b)], m)) if ("remat", b) in probes
                     and probes[("remat", b)].ok else float(getattr(r, m)) for b in space.batches)
            for m in _METRICS}
    unpiped: dict[str, tuple[float, ...]] = {}
    if u is not None and space.searches_pipelining:
        # What pipelining off changed, shared out like the offload deltas: each name's own change of
        # exposed transfer time, the rest by its host bytes.
        off = {f.name: f for f in u.names}
        more = [(off[n].exposed_us if n in off else 0.0) - x for n, x in zip(space.names, exposed, strict=True)]
        rest = (u.step_us - o.step_us) - sum(more)
        unpiped = {"device_bytes": tuple(wi * (u.device_bytes - o.device_bytes) for wi in w),
                   "host_bytes": tuple(wi * (u.host_bytes - o.host_bytes) for wi in w),
                   "step_us": tuple(mi + wi * rest for wi, mi in zip(w, more, strict=True))}
    return ProposalModel(space, base, delta, unpiped)


# ---- the search's decisions -------------------------------------------------------------------


def _feasible(p: Prediction, limits: Limits) -> bool:
    return p.device_bytes <= limits.device_bytes and p.host_bytes <= limits.host_bytes


def rank_key(model: ProposalModel, limits: Limits, goal: Goal, c: Config) -> tuple[bool, float, Config]:
    """Predicted to fit first, by objective; then the rest, smallest device bytes first; ties by config."""
    p = model.predict(c)
    if _feasible(p, limits):
        return (False, goal.cost(c.batch, p.step_us), c)
    return (True, p.device_bytes, c)


def _candidates(space: Space, model: ProposalModel, limits: Limits, goal: Goal,
                verified: Sequence[Verified]) -> Iterator[Config]:
    if space.size() <= ENUMERATE_UP_TO:
        yield from space.configs()
        return
    # Too many to list: descend from every verified point to a local optimum of the model,
    # yielding what was seen on the way and around it.
    seen: set[Config] = set()
    for v in verified:
        c = v.config
        while True:
            around = space.neighbours(c)
            for n in around:
                if n not in seen:
                    seen.add(n)
                    yield n
            nxt = min(around, key=lambda n: rank_key(model, limits, goal, n), default=c)
            if rank_key(model, limits, goal, nxt) >= rank_key(model, limits, goal, c):
                break
            c = nxt


def inert_names(space: Space, verified: Sequence[Verified]) -> frozenset[int]:
    """The names (indices) whose switch left the optimized HLO byte-identical between two verified
    points that differ in that name only: XLA compiled the same step whatever it was set to."""
    out: set[int] = set()
    by_fp: dict[str, list[Config]] = {}
    for v in verified:
        if v.ok and v.fingerprint:
            by_fp.setdefault(v.fingerprint, []).append(v.config)
    for configs in by_fp.values():
        for a, b in itertools.combinations(configs, 2):
            diff = [i for i, (x, y) in enumerate(zip(a.choices, b.choices, strict=True)) if x != y]
            if a.batch == b.batch and a.pipelined == b.pipelined and len(diff) == 1:
                out.add(diff[0])
    return frozenset(out)


def _canon(c: Config, inert: frozenset[int]) -> Config:
    """``c`` with its inert names' choices blanked, and its pipelining when it offloads nothing (the
    setting acts on host offloading alone: such a configuration compiles the same step either way)."""
    choices = tuple("*" if i in inert else x for i, x in enumerate(c.choices))
    return Config(choices, c.batch, c.pipelined if "offload" in choices else None)


def propose(space: Space, model: ProposalModel, limits: Limits, goal: Goal, verified: Sequence[Verified],
            k: int) -> list[Config]:
    """Up to ``k`` unverified configurations to compile next: the model's best-ranked, and the
    best-ranked single change of the best verified point (refining around it). A configuration
    that differs from a verified one only in inert names (:func:`inert_names`) is not proposed."""
    inert = inert_names(space, verified)
    seen = {_canon(v.config, inert) for v in verified}

    def done(c: Config) -> bool:
        return _canon(c, inert) in seen

    ranked = sorted((c for c in _candidates(space, model, limits, goal, verified) if not done(c)),
                    key=lambda c: rank_key(model, limits, goal, c))
    out = ranked[:1]
    top = best(verified, goal)
    if top is not None:
        around = sorted((n for n in space.neighbours(top.config) if not done(n) and n not in out),
                        key=lambda c: rank_key(model, limits, goal, c))
        out += around[:1]
    out += [c for c in ranked[1:] if c not in out][:max(0, k - len(out))]
    return out[:k]


def best(verified: Sequence[Verified], goal: Goal) -> Verified | None:
    """The verified point that meets the limits with the best objective (ties: fewer device bytes,
    then the plainer policy)."""
    ok = [v for v in verified if v.meets]
    return min(ok, key=lambda v: (goal.cost(v.config.batch, goal.timed_us(v)), v.device_bytes, _simplicity(v)),
               default=None)


def _simplicity(v: Verified) -> tuple[int, int, Config]:
    """On a tie (the same step and device bytes: often the same compile), the plainer policy first:
    fewer names kept or offloaded, fewer host bytes."""
    return (sum(1 for c in v.config.choices if c != "remat"), v.host_bytes, v.config)


def frontier(verified: Sequence[Verified], goal: Goal) -> list[Verified]:
    """The verified points that meet the limits and that no other such point beats on both device
    bytes and the objective, fewest device bytes first."""
    ok = sorted((v for v in verified if v.meets),
                key=lambda v: (v.device_bytes, goal.cost(v.config.batch, goal.timed_us(v)), _simplicity(v)))
    out: list[Verified] = []
    for v in ok:
        if not out or goal.cost(v.config.batch, goal.timed_us(v)) < goal.cost(out[-1].config.batch,
                                                                              goal.timed_us(out[-1])):
            out.append(v)
    return out


@dataclass(frozen=True)
class ErrorStats:
    """The model's error on the proposals: count; mean and largest relative error of the step and
    of the device bytes (fractions: 0.05 is 5%)."""

    count: int
    step_mean: float
    step_max: float
    device_mean: float
    device_max: float


def model_error(verified: Sequence[Verified]) -> ErrorStats:
    """What the model predicted for each compiled proposal, before compiling it, against the compile."""
    pairs = [(v, v.predicted) for v in verified if v.ok and v.predicted is not None and v.step_us > 0]
    steps = [abs(p.step_us - v.step_us) / v.step_us for v, p in pairs if p is not None]
    devs = [abs(p.device_bytes - v.device_bytes) / v.device_bytes for v, p in pairs
            if p is not None and v.device_bytes > 0]
    return ErrorStats(len(pairs), sum(steps) / len(steps) if steps else 0.0, max(steps, default=0.0),
                      sum(devs) / len(devs) if devs else 0.0, max(devs, default=0.0))


@dataclass(frozen=True)
class Neighbour:
    """A verified point one change from the best: which name (or ``batch``) changed, from and to
    what; its step and device bytes minus the best's; whether it meets the limits."""

    what: str
    was: str
    now: str
    step_delta_us: float
    device_delta_bytes: int
    meets: bool


@dataclass(frozen=True)
class Why:
    """Why the best is the best: its verified neighbours; per offloaded name what the analysis
    found (:class:`NameFacts`); per rematerialized name the step the model expects keeping it on
    device would save (µs, largest first); inert: the names whose switch XLA compiled to the very
    same step (:func:`inert_names`), left out of the neighbours."""

    neighbours: tuple[Neighbour, ...]
    offloaded: tuple[NameFacts, ...]
    remat_cost_us: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    inert: tuple[str, ...] = ()


def explain(space: Space, chosen: Verified, verified: Sequence[Verified], model: ProposalModel) -> Why:
    by_config = {v.config: v for v in verified if v.ok}
    near = []
    for n in space.neighbours(chosen.config):
        v = by_config.get(n)
        if v is None or (v.fingerprint and v.fingerprint == chosen.fingerprint):
            continue
        if n.batch != chosen.config.batch:
            what, was, now = "batch", str(chosen.config.batch), str(n.batch)
        elif n.pipelined != chosen.config.pipelined:
            what, was, now = "pipelined", on_off(chosen.config.pipelined), on_off(n.pipelined)
        else:
            i = next(i for i, (a, b) in enumerate(zip(n.choices, chosen.config.choices, strict=True)) if a != b)
            what, was, now = space.names[i], chosen.config.choices[i], n.choices[i]
        near.append(Neighbour(what, was, now, v.step_us - chosen.step_us, v.device_bytes - chosen.device_bytes,
                              v.meets))
    s = model._scale(chosen.config.batch)
    cost = sorted(((name, -model.delta["step_us"][i][0] * s) for i, name in enumerate(space.names)
                   if chosen.config.choices[i] == "remat" and "device" in space.allowed[i]),
                  key=lambda x: (-x[1], x[0]))
    mine = set(n for n, ch in zip(space.names, chosen.config.choices, strict=True) if ch == "offload")
    inert = tuple(space.names[i] for i in sorted(inert_names(space, verified)))
    return Why(tuple(near), tuple(f for f in chosen.names if f.name in mine), tuple(cost), inert)


def on_off(pipelined: bool | None) -> str:
    return {True: "on", False: "off", None: "-"}[pipelined]


# ---- the search as run ------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneSpec:
    """What to search: the compile every configuration starts from, the space, limits, goal, the
    compile budget and how many compiles a round proposes.

    request: the step (a built-in workload with its ``--set`` overrides, the switches left out; a
    user's ``--fn`` step with its ``--args`` and folder; or MaxText's ``--maxtext [CONFIG.yml]
    KEY=VALUE ...``, the switches left out), the target and devices, and the scheduler, pipelining
    (the search's one setting when it does not search it) and memory fraction of every compile.
    own_switches: the workload's switches as configured (``deepseek``'s preset choices), compiled
    as its ``--policy offload`` cell; None when it has none of its own (they are all ``offload``).
    maxtext: the names are MaxText's ``custom`` remat policy keys (its overrides can be pasted)."""

    request: CompileRequest
    space: Space
    limits: Limits
    goal: Goal
    max_compiles: int
    per_round: int = 2
    own_switches: tuple[str, ...] | None = None
    maxtext: bool = False

    @property
    def workload(self) -> str:
        """How reports name the step: the built-in workload, the ``--fn`` reference, or ``maxtext``."""
        return self.request.workload or self.request.fn or "maxtext"


@dataclass(frozen=True)
class TuneResult:
    """The search's outcome: every verified point in compile order, the frontier, the best (None:
    nothing met the limits), the final model, its error on the proposals, why it stopped
    (``budget``, ``converged``, ``exhausted``), rounds, wall seconds, and how many compiles
    were read from the cache. facts: per name, what the all-offload probe found. why: why the
    best beats its verified neighbours (None without a best)."""

    spec: TuneSpec
    verified: tuple[Verified, ...]
    frontier: tuple[Verified, ...]
    best: Verified | None
    model: ProposalModel | None
    error: ErrorStats
    stopped: str
    rounds: int
    seconds: float
    cached: int = 0
    facts: dict[str, NameFacts] = field(default_factory=dict)
    why: Why | None = None
