"""The 405B preset's host memory against PJRT's pinned-host pool (slow: a 128-GPU compile, minutes).

Read by hand in the optimized HLO of ``hloscope compile --preset llama3-405b --devices 128 --target
h100-sxm`` (jaxlib 0.10.2): the offloaded Q, K and V of the 126 layers are the only S(5) buffers,
bf16[126,2,8192,128,128] (Q, 63.0 GiB) and twice bf16[126,2,8192,8,128] (K, V, 3.94 GiB each): 76,101,451,776
bytes = 70.9 GiB per GPU, XLA's host_temp_size_in_bytes exactly. PJRT's default pool is 64 GiB.
"""

from __future__ import annotations

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK

pytestmark = [pytest.mark.slow, pytest.mark.xla]

ARGS = ["--workload", "llama3-405b", "--devices", "128", "--target", "h100-sxm", "--fits-host-pool"]
HOST = 126 * 2 * 8192 * (128 * 128 + 2 * 8 * 128) * 2


def test_llama_405b_does_not_fit_the_default_host_pool(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", raising=False)
    assert HOST == 76_101_451_776
    assert main(["check", "--no-config", *ARGS]) == EXIT_CHECK_FAILED
    out = capsys.readouterr().out
    assert "FAIL fits-host-pool" in out and "host memory 70.9 GiB per GPU" in out and "64.0 GiB" in out
    # With the pool raised as a run would raise it, the same step passes.
    assert main(["check", "--no-config", *ARGS, "--host-pool-gb", "72"]) == EXIT_OK


def test_llama_405b_has_xlas_remat_clones_beside_its_host_buffers() -> None:
    """Read in the same optimized HLO: 62 working instructions named *.remat / *.remat2 (bitcasts aside),
    among them GEMM clones (gemm_fusion_dot.99.remat2) and 5 collectives; 70.9 GiB of S(5) buffers."""
    from hloscope.compile.run.jobs import compile_request
    from hloscope.request import CompileRequest

    report = compile_request(CompileRequest(target="h100-sxm", devices=128, workload="llama3-405b")).report
    r = report.remat
    assert r is not None and r.host_buffers and r.suspicious
    assert r.clones == 62 and r.collectives == 5
    from hloscope.render import render_to_string

    assert "remat clones: XLA's rematerialization cloned 62 instruction(s)" in render_to_string("table", report)
