"""MaxText's own training step, compiled for compile-only GPUs or TPU slices (``hloscope compile --maxtext``).

MaxText's ahead-of-time compile (``maxtext.trainers.pre_train.train_compile.main``) builds the
step from its config (``base.yml`` of the installed ``maxtext`` by default, then ``KEY=VALUE``
overrides in MaxText's own syntax): the model, the optimizer, the shaped train state and batch,
the shardings, and ``train_step`` itself. Its GPU path takes ``jax.devices()`` from a real CUDA
client, so with no GPU it compiles for the host CPU. Here ``main`` runs as MaxText wrote it, with
three of its functions swapped while it runs (:func:`_maxtext_private_hooks`, the one place that
reaches into MaxText's internals):

- ``get_topology_mesh``: MaxText's own mesh code (``maxtext_utils.create_device_mesh``) over
  hloscope's compile-only GPUs of the target (``hloscope.compile.cuda.topology.compile_only_devices``),
  with each host a MaxText "slice" (DCN axes run across hosts, ICI axes inside one; jax's hybrid
  mesh groups the devices by ``process_index``);
- ``jit_and_compile``: the same ``jax.jit`` of ``train_step``, traced under MaxText's mesh and
  logical axis rules, compiled by :func:`hloscope.compile.step.deviceless.compile_step` (the flags, the
  dumps, the scheduler's log, the checkpoint names and the offload intent read from the jaxpr, as
  for the built-in workloads); ``main`` stops there;
- ``pyconfig._handle_config_exception``: MaxText's config errors raise (one line, exit 2) instead
  of ``sys.exit(2)`` after a banner.

hloscope sets ``hardware=gpu``, ``internal_compile=True`` with the device count, and the number of
hosts as ``compile_topology_num_slices``; the user may not (:data:`OWNED_KEYS`).
``attention=cudnn_flash_te`` (TransformerEngine) does not compile without a GPU: it is compiled
as ``cudnn_flash_jax`` (the same cuDNN fused attention called through JAX) and the result says so.

For a TPU target MaxText's own ahead-of-time path runs unchanged up to the compile: hloscope sets
``hardware=tpu``, ``compile_topology`` (the slice's name in MaxText's ``accelerator_to_spec_map.py``,
``v5p-256``: :attr:`hloscope.compile.tpu.slices.TpuSlice.maxtext_name`) and
``compile_topology_num_slices`` (``--slices``: MaxText joins them over DCN, its ``dcn_*_parallelism``
axes across them, ``dcn_data_parallelism: -1`` by default), and MaxText's ``get_topology_mesh`` asks
libtpu for those slices' compile-only devices and lays its mesh out itself (its map's slice is checked
against hloscope's: the TPU room's ``maxtext_check``). Only ``jit_and_compile`` (the compile, with
hloscope's options, dumps and names) and ``pyconfig._handle_config_exception`` (one line) are
hloscope's. libtpu is loaded by hloscope first, quiet (:func:`hloscope.compile.tpu.runtime.prepare`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import io
import os
import re
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from hloscope.analysis.intent.account import Preset
from hloscope.compile.cuda.topology import compile_only_devices
from hloscope.compile.result import CompileResult
from hloscope.compile.seam import environment
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest, Layout
from hloscope.targets import get_target

#: The one line for a Python or an install that cannot run MaxText.
INSTALL_HINT = "pip install 'hloscope[maxtext]'"
#: MaxText 0.2.5 declares Python >= 3.12.
MIN_PYTHON = (3, 12)
#: Config keys hloscope sets from ``--target`` / ``--devices``.
OWNED_KEYS = ("hardware", "compile_topology", "compile_topology_num_slices", "internal_compile",
              "internal_compile_num_devices")
#: The attention MaxText's GPU recipes run, which needs TransformerEngine's kernels on a real GPU ...
TE_ATTENTION = "cudnn_flash_te"
#: ... and the nearest one that compiles with no GPU: cuDNN's fused attention through JAX.
DEVICELESS_ATTENTION = "cudnn_flash_jax"
#: What MaxText's checkpoint names are, for the report (names MaxText's layers give ``checkpoint_name``).
ROLES = {"query_proj": "Q projection", "key_proj": "K projection", "value_proj": "V projection",
         "qkv_proj": "fused QKV projection", "out_proj": "attention output projection",
         "mla_q": "MLA low-rank query", "mla_kv": "MLA normalized KV latent",
         "mlpwi": "FFN input projection", "mlpwi_0": "FFN gate projection", "mlpwi_1": "FFN up projection",
         "mlpwo": "FFN down projection", "moe_mlpwi_0": "routed experts' gate projection",
         "moe_mlpwi_1": "routed experts' up projection", "moe_mlpwo": "routed experts' down projection",
         "decoder_layer_input": "decoder layer input", "context": "attention context",
         "query_wa_proj": "MLA query down projection", "kv_wa_proj": "MLA KV down projection"}


@dataclass(frozen=True)
class MaxTextArgs:
    """``--maxtext [CONFIG.yml] KEY=VALUE ...`` split: the config file (None: MaxText's base.yml) and
    the overrides, as MaxText's command line takes them."""

    config: str | None
    overrides: tuple[str, ...]

    def argv(self) -> list[str]:
        """MaxText's ``argv`` (its first item is the program, the second the config file)."""
        return ["hloscope", *([self.config] if self.config else []), *self.overrides]


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def split_args(items: Sequence[str]) -> MaxTextArgs:
    """``[CONFIG.yml] KEY=VALUE ...`` -> :class:`MaxTextArgs`; anything else is one line (exit 2).

    The config file, when given, comes first and must exist; each override is ``KEY=VALUE``
    (MaxText's syntax; ``KEY: VALUE`` as its recipes sometimes write is refused here, as the
    values would be lost); keys hloscope sets itself (:data:`OWNED_KEYS`) are refused."""
    config = None
    rest = list(items)
    if rest and rest[0].endswith((".yml", ".yaml")) and "=" not in rest[0]:
        config = rest.pop(0)
        if not os.path.isfile(config):
            raise HloscopeError(f"--maxtext {config}: no such config file", EXIT_BAD_INPUT)
        config = os.path.abspath(config)
    seen: set[str] = set()
    for item in rest:
        key, eq, _ = item.partition("=")
        if not eq or not _KEY.match(key):
            where = " (a config file comes first)" if item.endswith((".yml", ".yaml")) else ""
            raise HloscopeError(f"--maxtext: '{item}' is not KEY=VALUE{where}", EXIT_BAD_INPUT)
        if key in OWNED_KEYS:
            raise HloscopeError(f"--maxtext: {key} is set by hloscope from --target and --devices; leave it out",
                                EXIT_BAD_INPUT)
        if key in seen:
            raise HloscopeError(f"--maxtext: {key} is given twice", EXIT_BAD_INPUT)
        seen.add(key)
    return MaxTextArgs(config, tuple(rest))


def check_available(version: tuple[int, ...] | None = None, found: bool | None = None) -> None:
    """One line (exit 2) when this Python cannot run MaxText or ``maxtext`` is not installed;
    ``version`` / ``found`` stand in for this interpreter's (tests)."""
    v = tuple(sys.version_info[:2]) if version is None else version
    if v < MIN_PYTHON:
        raise HloscopeError(f"--maxtext needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer (MaxText requires it); "
                            f"this is Python {'.'.join(map(str, v))}: on Python 3.12+, {INSTALL_HINT}", EXIT_BAD_INPUT)
    if found is None:
        found = importlib.util.find_spec("maxtext") is not None
    if not found:
        raise HloscopeError(f"--maxtext needs MaxText, which is not installed: {INSTALL_HINT}", EXIT_BAD_INPUT)


def owned_overrides(target: Any, devices: int, layout: Layout | None = None) -> list[str]:
    """The keys hloscope sets (:data:`OWNED_KEYS`), by the target's compile room (``maxtext_overrides``). For a
    GPU: an AOT compile of ``devices`` devices whose hosts (``target.gpus_per_host`` GPUs each) are MaxText's
    slices; ``compile_topology`` only has to be a GPU system MaxText knows (``a3``): the devices themselves
    come from hloscope's topology. For a TPU: MaxText's own TPU path, ``compile_topology`` one slice's MaxText
    name (``v5p-256``) and ``compile_topology_num_slices`` the layout's slices (MaxText lays its ``dcn_*`` axes
    across them)."""
    # lazy: the compile rooms (the TPU room loads the slices; a GPU's, CUDA's topology)
    from hloscope.compile.step.rooms import room_for

    return room_for(target, layout).maxtext_overrides(devices)


def one_line(e: BaseException) -> str:
    """An exception's message on one line: its non-empty lines joined (a pydantic error names the key
    on one line and the problem on the next)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("For further information visit")]
    return (" ".join(lines) or type(e).__name__)[:500]


class _Done(Exception):
    """Raised by the swapped ``jit_and_compile`` once the step is compiled: MaxText's ``main`` stops there."""


@dataclass
class _Run:
    """What one MaxText compile collects while ``main`` runs."""

    request: CompileRequest
    phase: Callable[[str], None] | None
    result: CompileResult | None = None
    config: Any = None
    attention_note: str = ""


def _say(run: _Run, name: str) -> None:
    if run.phase is not None:
        run.phase(name)


def _mesh(run: _Run, config: Any) -> Any:
    """MaxText's ``get_topology_mesh`` with hloscope's compile-only GPUs as the devices."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax
    from jax.sharding import AxisType, Mesh

    ShardMode = _module("maxtext.common.common_types").ShardMode
    maxtext_utils = _module("maxtext.utils.maxtext_utils")
    # lazy: the compile step; the CLI checks --maxtext without it
    from hloscope.compile.step.deviceless import with_memory

    run.config = config
    _say(run, "MaxText model")
    request = run.request
    target = with_memory(get_target(request.target), request.memory_override_bytes)
    devices = compile_only_devices(target, request.devices)
    jax.config.update("jax_remove_size_one_mesh_axis_from_type", config.remove_size_one_mesh_axis_from_type)
    try:
        grid = maxtext_utils.create_device_mesh(config, devices)
    except (AssertionError, ValueError) as e:
        raise HloscopeError(f"MaxText's mesh for {request.devices} GPUs: {one_line(e)}", EXIT_BAD_INPUT) from None
    axis_type = AxisType.Explicit if config.shard_mode == ShardMode.EXPLICIT else AxisType.Auto
    return Mesh(grid, config.mesh_axes, axis_types=(axis_type,) * len(config.mesh_axes))


class _MaxTextStep:
    """MaxText's jitted ``train_step`` with its arguments, traced under MaxText's mesh and logical axis
    rules (what its ``jit_and_compile`` does); ``compile_step`` takes it as a ``jax.jit`` function."""

    def __init__(self, jitted: Any, args: Sequence[Any], kwargs: dict[str, Any], mesh: Any, rules: Any,
                 diloco: bool) -> None:
        self.jitted, self.args, self.kwargs = jitted, args, kwargs
        self.mesh, self.rules, self.diloco = mesh, rules, diloco
        self.__name__ = "train_step"

    def __call__(self, *_: Any) -> Any:
        return self.jitted(*self.args, **self.kwargs)

    def trace(self, *_: Any) -> Any:
        # lazy: jax is slow to import; only when tracing or compiling
        import jax

        mesh_ctx = self.mesh if self.diloco else contextlib.nullcontext()
        with jax.set_mesh(self.mesh), mesh_ctx, self.rules:
            return self.jitted.trace(*self.args, **self.kwargs)

    def lower(self, *_: Any) -> Any:
        return self.trace().lower()


def _jit_and_compile(run: _Run) -> Callable[..., Any]:
    """MaxText's ``jit_and_compile``, compiled by :func:`hloscope.compile.step.deviceless.compile_step`."""

    def jit_and_compile(func: Any, func_input_args: Any, func_input_kwargs: Any, mesh: Any, in_shardings: Any,
                        out_shardings: Any, static_argnums: Any, donate_argnums: Any, config: Any,
                        logical_axis_rules: Any) -> Any:
        # lazy: jax is slow to import; only when tracing or compiling
        import jax

        # lazy: the compile step; the CLI checks --maxtext without it
        from hloscope.compile.step.deviceless import StepOptions, compile_step

        if run.config is None:  # a TPU compile: MaxText built its mesh itself
            run.config = config
            _say(run, "MaxText model")
        jitted = jax.jit(func, in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
                         donate_argnums=donate_argnums)
        step = _MaxTextStep(jitted, tuple(func_input_args), dict(func_input_kwargs or {}), mesh, logical_axis_rules,
                            bool(getattr(config, "enable_diloco", False)))
        try:
            run.result = compile_step(run.request, step, (), StepOptions(mesh=mesh, roles=ROLES, cache=True,
                                                                         phase=run.phase,
                                                                         preset=maxtext_preset(config)))
        except HloscopeError as e:
            raise _config_error_at_trace(e, config) from None
        raise _Done

    return jit_and_compile


#: What MaxText 0.2.5 raises while tracing for a config value it checks only there (attention_op.py,
#: nnx_decoders.py): the config key each message is about.
TRACE_CHECKED = (("Unexpected attention kernel", "attention"), ("Remat policy needs to be on list", "remat_policy"))


def _config_error_at_trace(e: HloscopeError, config: Any) -> HloscopeError:
    """A trace failure that is MaxText refusing a config value (:data:`TRACE_CHECKED`) as a config error
    (exit 2, naming the key and value); any other error unchanged."""
    text = str(e)
    for words, key in TRACE_CHECKED:
        if words in text:
            said = text.split("failed: ", 1)[-1]
            return HloscopeError(f"MaxText config: {key}={getattr(config, key, '?')}: {said}", EXIT_BAD_INPUT)
    return e


def _raise_config_error(e: Exception) -> None:
    raise HloscopeError(f"MaxText config: {one_line(e)}", EXIT_BAD_INPUT) from None


@contextlib.contextmanager
def _maxtext_private_hooks(run: _Run, own_mesh: bool = False) -> Iterator[Any]:
    """MAXTEXT (AND JAX) PRIVATE HOOKS: the one place hloscope reaches into MaxText's internals.

    While the block runs, ``train_compile.get_topology_mesh``, ``train_compile.jit_and_compile``
    and ``pyconfig._handle_config_exception`` are hloscope's (module docstring), and MaxText's
    ``maxtext_utils.mesh_utils`` is jax's ``mesh_utils`` whose ``create_hybrid_device_mesh``
    groups devices by host (``process_is_granule=True``): compile-only devices of one NVLink
    domain share a ``slice_index``, and MaxText's DCN axes are meant to run across hosts (its GPU
    recipes: ``dcn_fsdp_parallelism`` = the node count). Read in MaxText 0.2.5; yields MaxText's
    ``train_compile`` module. Everything is put back afterwards. Where MaxText builds the devices' mesh
    itself (``own_mesh``: the compile room's ``maxtext_builds_mesh``, a TPU's) only ``jit_and_compile`` and
    ``_handle_config_exception`` are swapped: MaxText's own ``get_topology_mesh`` builds the slice and its mesh.
    """
    # lazy: jax is slow to import; only when tracing or compiling
    from jax.experimental import mesh_utils

    pyconfig = _module("maxtext.configs.pyconfig")
    train_compile = _module("maxtext.trainers.pre_train.train_compile")
    maxtext_utils = _module("maxtext.utils.maxtext_utils")

    granule = types.SimpleNamespace(**{k: getattr(mesh_utils, k) for k in dir(mesh_utils) if not k.startswith("__")})
    granule.create_hybrid_device_mesh = functools.partial(mesh_utils.create_hybrid_device_mesh,
                                                          process_is_granule=True)
    swaps: list[tuple[Any, str, object]] = [(train_compile, "jit_and_compile", _jit_and_compile(run)),
                                            (pyconfig, "_handle_config_exception", _raise_config_error)]
    if not own_mesh:
        swaps += [(train_compile, "get_topology_mesh", functools.partial(_mesh, run)),
                  (maxtext_utils, "mesh_utils", granule)]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in swaps]
    try:
        for mod, name, value in swaps:
            setattr(mod, name, value)
        yield train_compile
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


def _module(name: str) -> Any:
    """A module of MaxText (or of tokamax, which it brings), imported by name: neither ships type hints."""
    return importlib.import_module(name)


def _import_maxtext() -> None:
    """Import MaxText's train step once, its import-time chatter (transformers, stubs) kept off the terminal."""
    environment.prepare()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), environment.quiet_native_stderr():
            _module("maxtext.trainers.pre_train.train_compile")
    except ImportError as e:
        raise HloscopeError(f"cannot import MaxText's train step ({e}): {INSTALL_HINT}", EXIT_BAD_INPUT) from None


def attention_in(argv: Sequence[str]) -> str | None:
    """The ``attention=`` override in MaxText's ``argv``, if any."""
    for item in argv:
        key, _, value = item.partition("=")
        if key == "attention":
            return value
    return None


def compile_maxtext_job(request: CompileRequest,
                        phase: Callable[[str], None] | None = None) -> tuple[CompileResult, dict[str, Any]]:
    """Compile MaxText's train step for ``request`` in this process: (CompileResult, manifest extras)."""
    check_available()
    args = split_args(request.maxtext or ())
    target = get_target(request.target)
    argv = [*args.argv(), *owned_overrides(target, request.devices, request.layout)]
    run = _Run(request, phase)
    if phase:
        phase("MaxText config")
    # lazy: the compile step; the CLI checks --maxtext without it
    from hloscope.compile.step.rooms import room_for

    # The devices first: the CUDA plugin's log (which scheduler and estimator XLA chose) is set up at its
    # first topology, and MaxText's import would otherwise start the plugin before hloscope asks for it;
    # libtpu reads its environment once, at load, and hloscope's keeps it quiet.
    room = room_for(target, request.layout)
    room_for(room.maxtext_target(request), request.layout).devices(request.devices)
    _import_maxtext()
    room.maxtext_check(request.devices,
                       lambda name: _module("maxtext.utils.accelerator_to_spec_map")
                       .UserFacingNameToSystemCharacteristics.get(name))
    argv, run.attention_note = _deviceless_attention(argv)
    logs = io.StringIO()
    tokamax_config = _module("tokamax.config")
    # tokamax's kernels (MaxText's default GPU flash attention, its grouped matmuls) check the device
    # they run on; cross_compile is tokamax's switch for compiling on another machine than the GPU's.
    with _maxtext_private_hooks(run, room.maxtext_builds_mesh) as train_compile, tokamax_config.cross_compile(True):
        try:
            with contextlib.redirect_stdout(logs), contextlib.redirect_stderr(logs):
                train_compile.main(argv)
        except _Done:
            pass
        except HloscopeError:
            raise
        except SystemExit as e:
            raise HloscopeError(f"MaxText exited ({e.code}): {_last_line(logs.getvalue())}", EXIT_BAD_INPUT) from None
        except AssertionError as e:
            raise HloscopeError(f"MaxText: {one_line(e)}", EXIT_BAD_INPUT) from None
    if run.result is None:
        raise HloscopeError(f"MaxText's train_compile finished without compiling a step: {_last_line(logs.getvalue())}",
                            EXIT_BAD_INPUT)
    return run.result, {"maxtext": _facts(run, args, argv)}


#: MaxText's ``remat_policy`` whose names the user lists (one config key per tensor), not MaxText.
USER_LISTED_POLICY = "custom"


def maxtext_preset(config: Any) -> Preset | None:
    """The preset that built the step's remat policies: MaxText's ``remat_policy`` (``qkv_proj_offloaded``
    lists ``kv_proj``, which a llama never tags: the accounting then says it is MaxText's name, not the
    user's typo); None for ``custom``, whose names are the user's config keys."""
    remat_policy = getattr(config, "remat_policy", None)
    value = getattr(remat_policy, "value", remat_policy)  # MaxText's config may hold its RematPolicy enum
    if not isinstance(value, str) or value == USER_LISTED_POLICY:
        return None
    return Preset("MaxText", "remat_policy", value)


def _deviceless_attention(argv: list[str]) -> tuple[list[str], str]:
    """``argv`` with ``attention=cudnn_flash_te`` replaced by :data:`DEVICELESS_ATTENTION`, and the note saying so.

    Only an override is replaced here; a config file that sets it is caught when the config is read
    (MaxText then builds TransformerEngine's attention, which fails to trace with no GPU)."""
    if attention_in(argv) != TE_ATTENTION:
        return argv, ""
    note = (f"attention={TE_ATTENTION} (TransformerEngine) does not compile without a GPU; compiled with "
            f"attention={DEVICELESS_ATTENTION}, the same cuDNN fused attention called through JAX")
    return [f"attention={DEVICELESS_ATTENTION}" if a == f"attention={TE_ATTENTION}" else a for a in argv], note


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no message"


def _facts(run: _Run, args: MaxTextArgs, argv: Sequence[str]) -> dict[str, Any]:
    """What the manifest records of a MaxText compile: the config file, the overrides, the model,
    attention and remat policy MaxText built, MaxText's version, and any substitution made."""
    config = run.config
    try:
        maxtext_version = metadata.version("maxtext")
    except metadata.PackageNotFoundError:
        maxtext_version = ""

    def get(name: str) -> Any:
        value = getattr(config, name, None)
        return value if isinstance(value, str | int | float | bool) or value is None else str(value)

    return {"config": args.config or "base.yml", "overrides": list(args.overrides), "argv": list(argv[1:]),
            "version": maxtext_version, "model_name": get("model_name"), "attention": get("attention"),
            "remat_policy": get("remat_policy"), "scan_layers": get("scan_layers"),
            "decoder_block": get("decoder_block"), "num_decoder_layers": get("num_decoder_layers"),
            "vocab_size": get("vocab_size"), "per_device_batch_size": get("per_device_batch_size"),
            "note": run.attention_note}
