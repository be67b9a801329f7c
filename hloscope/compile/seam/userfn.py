"""Loading a user's step function and its abstract arguments from the command line."""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, EXIT_TRACE_FAILED, HloscopeError

_ARG_RE = re.compile(r"^\s*([a-z0-9]+)\[([0-9,\s]*)\]\s*(?:@\s*([^:]*))?(?::\s*([a-z_]+)\s*)?$")
#: Memory kinds an argument may name after ``:`` (the GPU's: docs/compile.md).
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "s8": "int8",
           "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8", "u32": "uint32", "pred": "bool"}


#: ``--args @module:function`` (what ``--args-from module:function`` passes): the arguments are
#: what that function returns.
ARGS_FROM = "@"


def args_from(ref: str, mesh: Any, cwd: str | None = None) -> tuple[Any, ...]:
    """The abstract arguments ``module:function`` returns: a tuple (or list) of pytrees (dicts,
    lists, tuples, dataclasses registered with JAX) of ``jax.ShapeDtypeStruct``; the function is
    called with the mesh when it takes a parameter (to build ``NamedSharding``s), else with none."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    fn = load_user_fn(ref, cwd)
    try:
        takes_mesh = bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        takes_mesh = False
    try:
        got = fn(mesh) if takes_mesh else fn()
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise HloscopeError(f"--args-from {ref}: {type(e).__name__}: {first}", EXIT_TRACE_FAILED) from None
    if not isinstance(got, (tuple, list)):
        raise HloscopeError(f"--args-from {ref}: returned {type(got).__name__}; expected a tuple of the step's "
                            "positional arguments (pytrees of jax.ShapeDtypeStruct)", EXIT_BAD_INPUT)
    for path, leaf in jax.tree_util.tree_flatten_with_path(tuple(got))[0]:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            where = jax.tree_util.keystr(path)
            raise HloscopeError(f"--args-from {ref}: argument leaf {where} is {type(leaf).__name__}, not an array "
                                "description (jax.ShapeDtypeStruct)", EXIT_BAD_INPUT)
    return tuple(got)


def parse_args_spec(spec: str, mesh: Any, cwd: str | None = None) -> tuple[Any, ...]:
    """``bf16[512,1024]@fsdp,None:pinned_host; s32[64]`` -> sharded ``jax.ShapeDtypeStruct``s.

    After the axes, ``:KIND`` places the argument in that memory (``device``,
    ``pinned_host``, ``unpinned_host``). ``@module:function`` instead takes the arguments,
    pytrees included, from that function (:func:`args_from`)."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    if spec.strip().startswith(ARGS_FROM):
        return args_from(spec.strip()[len(ARGS_FROM):].strip(), mesh, cwd)

    out = []
    for i, item in enumerate(s for s in spec.split(";") if s.strip()):
        m = _ARG_RE.match(item)
        if m is None:
            raise HloscopeError(f"--args item {i + 1} '{item.strip()}': expected dtype[d0,d1,...]@axis,...[:memory]",
                                EXIT_BAD_INPUT)
        kind = m.group(4)
        if kind is not None and kind not in MEMORY_KINDS:
            raise HloscopeError(f"--args item {i + 1}: unsupported memory kind '{kind}': the target's GPUs have "
                                f"{', '.join(MEMORY_KINDS)}", EXIT_BAD_INPUT)
        try:
            dtype = jnp.dtype(_DTYPES.get(m.group(1), m.group(1)))
        except TypeError:
            raise HloscopeError(f"--args item {i + 1}: unknown dtype '{m.group(1)}'", EXIT_BAD_INPUT) from None
        dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
        axes: list[str | None] = []
        if m.group(3) is not None:
            axes = [None if a.strip() in ("None", "_", "") else a.strip() for a in m.group(3).split(",")]
        for a in axes:
            if a is not None and a not in mesh.axis_names:
                raise HloscopeError(
                    f"--args item {i + 1}: mesh has no axis '{a}' (axes: {', '.join(mesh.axis_names)})",
                    EXIT_BAD_INPUT)
        out.append(jax.ShapeDtypeStruct(dims, dtype, sharding=NamedSharding(mesh, PartitionSpec(*axes),
                                                                            memory_kind=kind)))
    return tuple(out)


def split_ref(ref: str) -> tuple[str, str]:
    """``package.module:function`` -> (module, function); anything else is one line (exit 2)."""
    mod_name, colon, fn_name = ref.partition(":")
    if not colon or not mod_name or not fn_name:
        raise HloscopeError(f"--fn wants package.module:function, got '{ref}'", EXIT_BAD_INPUT)
    return mod_name, fn_name


def check_findable(ref: str, cwd: str | None = None) -> None:
    """Refuse, in one line (exit 2) and before JAX starts, an ``--fn`` whose module's top-level package
    is nowhere to import from (the working folder ``cwd``, the Python path, installed packages); found
    without importing anything. An error inside a module that is there is the import's (exit 4)."""
    mod_name, _ = split_ref(ref)
    top = mod_name.split(".")[0]
    if cwd:
        sys.path.insert(0, cwd)
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    finally:
        if cwd:
            sys.path.remove(cwd)
    if spec is None:
        where = f"the working folder {cwd}, " if cwd else ""
        raise HloscopeError(f"--fn {ref}: no module named '{top}' to import (looked in {where}the Python path and "
                            "the installed packages)", EXIT_BAD_INPUT)


#: Most files a fingerprint of the user's code reads (a top-level module beside thousands of
#: others, an enormous package): more is no fingerprint (the compile is not reused).
MAX_SOURCE_FILES = 2000


def _module_files(module: str, cwd: str | None) -> list[Path] | None:
    """The .py files ``module``'s code can import from its own place, found without importing
    anything: every file of its top-level package, or, for a plain module, the .py files beside it.
    None when it is not a plain file or package on the path (a namespace package, a zip, a
    compiled extension): then it cannot be fingerprinted."""
    top = module.split(".")[0]
    spec = importlib.machinery.PathFinder.find_spec(top, [*([cwd] if cwd else []), *sys.path])
    if spec is None or spec.origin is None or not spec.has_location:
        return None
    origin = Path(spec.origin)
    if origin.suffix != ".py":
        return None
    if spec.submodule_search_locations:  # a package: all of it
        files = sorted(origin.parent.rglob("*.py"))
    else:
        files = sorted(origin.parent.glob("*.py"))
    return files if len(files) <= MAX_SOURCE_FILES else None


def source_fingerprint(fn_ref: str, args: str | None, cwd: str | None) -> str | None:
    """SHA-256 over the user's step code for a ``--fn`` compile: the files of the module ``fn_ref``
    names and of the one an ``--args-from`` (``@module:function``) names (:func:`_module_files`),
    each by path and content. None when one cannot be found or read without importing it: such a
    compile is never reused. What this misses, said in docs/compile.md: code outside those files
    (another package the step imports, data files it reads)."""
    refs = [fn_ref] + ([args.strip()[len(ARGS_FROM):].strip()] if args and args.strip().startswith(ARGS_FROM) else [])
    h = hashlib.sha256()
    for ref in refs:
        files = _module_files(ref.partition(":")[0], cwd)
        if files is None:
            return None
        for f in files:
            try:
                h.update(str(f.resolve()).encode() + b"\0" + f.read_bytes() + b"\0")
            except OSError:
                return None
    return h.hexdigest()


def load_user_fn(ref: str, cwd: str | None = None) -> Any:
    """Import ``package.module:function`` (the working directory is importable)."""
    mod_name, fn_name = split_ref(ref)
    if cwd:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:
        m = re.search(r"invalid memory kind: ?(\S+?)\.? Valid memory kinds are: ([\w, ]+)", str(e), re.I)
        if m:  # a NamedSharding built at import with a memory kind the GPUs do not have
            raise HloscopeError(f"cannot import '{mod_name}': unsupported memory kind '{m.group(1)}': the "
                                f"target's GPUs have {m.group(2).strip()}", EXIT_BAD_INPUT) from None
        first = (str(e).strip().splitlines() or [""])[0]
        raise HloscopeError(f"cannot import '{mod_name}': {type(e).__name__}: {first}", EXIT_TRACE_FAILED) from None
    finally:
        if cwd:
            sys.path.remove(cwd)
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise HloscopeError(f"'{mod_name}' has no function '{fn_name}'", EXIT_TRACE_FAILED)
    return fn
