"""``hloscope sweep --executor ray``: the same rows as the local executor, from a Ray head
on 127.0.0.1 that the test starts (``ray start --head --block``) and stops.

Skipped without the ``ray`` extra. The bad-address and missing-Ray cases need no head.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT

SWEEP = ["sweep", "mlp", "--policies", "offload,remat", "--schedulers", "lhs", "--json"]
#: What the executor cannot change: every figure read from the compiled HLO.
SAME = ("policy", "scheduler", "pipelined", "batch", "peak_device_bytes", "host_bytes", "fits", "transfers",
        "hidden", "partial", "exposed", "sync", "est_exposed_us", "est_step_us", "fingerprint", "identical_to",
        "error", "cell", "device_allocation_bytes", "cache_key")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def ray_head() -> Iterator[str]:
    """A Ray head on 127.0.0.1 in a session of its own (``ray start --block``), stopped by
    signalling that session's process group: only what this test started."""
    pytest.importorskip("ray")
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    ray_cli = str(Path(sys.executable).with_name("ray"))
    # The workers inherit this environment (JAX's compile-only set-up from conftest, the
    # PYTHONPATH this hloscope came from); token authentication is for shared clusters.
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    head = subprocess.Popen([ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--block",
                             f"--temp-dir={temp}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and head.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.5)
        assert head.poll() is None, "ray start --head exited"
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def _sweep(args: list[str], env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    done = subprocess.run([sys.executable, "-m", "hloscope", *args], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.ray
@pytest.mark.xla
def test_ray_executor_gives_the_local_rows_then_the_cache(ray_head: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("HLOSCOPE_NO_CACHE", None)
    local = _sweep(SWEEP, dict(env, HLOSCOPE_CACHE_DIR=str(tmp_path / "local-cache")))
    # A cache of its own: the Ray workers compile every cell themselves.
    ray_env = dict(env, HLOSCOPE_CACHE_DIR=str(tmp_path / "ray-cache"))
    cold = _sweep([*SWEEP, "--executor", "ray", "--address", ray_head], ray_env)
    assert cold["summary"]["executor"] == "ray" and cold["summary"]["compiled"] == 4
    assert not any(r["cached"] for r in cold["rows"])
    by_cell = {r["cell"]: r for r in local["rows"]}
    assert sorted(by_cell) == sorted(r["cell"] for r in cold["rows"])
    for r in cold["rows"]:
        assert {k: r[k] for k in SAME} == {k: by_cell[r["cell"]][k] for k in SAME}
    # The same sweep again: every row from the cache the workers filled.
    warm = _sweep([*SWEEP, "--executor", "ray", "--address", ray_head], ray_env)
    assert all(r["cached"] for r in warm["rows"]) and warm["summary"]["cached"] == 4
    assert [r["fingerprint"] for r in warm["rows"]] == [r["fingerprint"] for r in cold["rows"]]


@pytest.mark.ray
def test_bad_address_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray")
    port = _free_port()  # nothing listens there once the probe socket is closed
    assert main([*SWEEP, "--executor", "ray", "--address", f"127.0.0.1:{port}"]) == EXIT_BAD_INPUT
    assert main([*SWEEP, "--executor", "ray", "--address", "not-an-address"]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 2
    assert lines[0].startswith(f"hloscope: error: --address 127.0.0.1:{port}: no Ray head reachable there")
    assert lines[1].startswith("hloscope: error: --address 'not-an-address': expected HOST:PORT")


def test_without_ray_the_executor_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    assert main([*SWEEP, "--executor", "ray"]) == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert err == "hloscope: error: --executor ray needs Ray: pip install 'hloscope[ray]'\n"


@pytest.mark.ray
@pytest.mark.parametrize(("error", "expected"), [
    ("WorkerCrashedError", "Ray: WorkerCrashedError after 2 retries: The worker died unexpectedly"),
    ("NodeDiedError", "Ray: NodeDiedError after 2 retries: node 10.0.0.7 died"),
    ("OutOfMemoryError", "Ray: the worker ran out of memory (2 retries)"),
    ("TaskCancelledError", "Ray: cancelled"),
])
def test_a_lost_task_is_a_failed_row_naming_its_cell(error: str, expected: str) -> None:
    # What ray.get raises once Ray gave up on a task (after its retries) becomes the cell's row.
    ray = pytest.importorskip("ray")
    from hloscope.compile.search.executors import RayExecutor
    from hloscope.compile.search.sweep import cells

    cls = getattr(ray.exceptions, error)
    exc = cls("node 10.0.0.7 died") if error == "NodeDiedError" else cls("low memory") \
        if error == "OutOfMemoryError" else cls()

    class Lost:
        exceptions = ray.exceptions

        @staticmethod
        def get(ref: object) -> dict:  # type: ignore[type-arg]
            raise exc

    [cell] = cells("mlp", {}, "h100-sxm", 8, ["offload"], [8], ["lhs"], [True])
    executor = RayExecutor.__new__(RayExecutor)  # no cluster: only the mapping of Ray's verdicts
    executor.retries = 2
    out = executor._row(Lost, object(), cell)
    assert out["cell"] == "offload scheduler=lhs pipelined=on batch=8" and out["cached"] is False
    assert out["error"].startswith(expected) and out["fingerprint"] == ""
