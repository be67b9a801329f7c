"""The JAX-version paths (``hloscope.compile.seam.jaxcompat``): the tested range, its one-line note, and
the per-version choices, against the versions measured here (jax 0.8.3, 0.9.2, 0.10.2; docs/jax-versions.md)."""

from __future__ import annotations

import warnings

import pytest

from hloscope.cli import compiling
from hloscope.compile.seam import jaxcompat

pytestmark = pytest.mark.jax_version  # the installed JAX against the tested range and its per-version choices


@pytest.mark.parametrize(("version", "says"), [
    ("0.7.2", "outside the range hloscope is tested with (jax 0.9.0 to 0.12.x)"),
    ("0.8.3", "on jax 0.8: checkpoint names and source lines can be attached to another tensor's transfers"),
    ("0.13.0", "outside the range"),
    ("0.13.0rc1", "outside the range"),
])
def test_a_version_outside_the_range_gets_one_line(version: str, says: str) -> None:
    note = jaxcompat.version_note(version)
    assert says in note and "\n" not in note and note.startswith(f"jax {version} is outside")


@pytest.mark.parametrize("version", ["0.9.0", "0.9.0.1", "0.9.2", "0.10.0", "0.10.2", "0.11.0", "0.11.1", "0.12.0.1",
                                     ""])
def test_a_tested_version_has_no_note(version: str) -> None:
    assert jaxcompat.version_note(version) == ""


def test_compile_flags_turn_autotuning_off_only_before_0_9() -> None:
    # jaxlib 0.8.3 stopped with "Expect autotune result cache hit for deviceless compilation"
    assert jaxcompat.compile_flags("0.8.3") == {"xla_gpu_autotune_level": 0}
    assert jaxcompat.compile_flags("0.9.0.1") == {} and jaxcompat.compile_flags("0.10.2") == {}


def test_live_range_dump_from_0_10() -> None:
    assert not jaxcompat.dumps_live_range("0.9.2") and jaxcompat.dumps_live_range("0.10.2")


def test_memory_space_of_the_installed_jax() -> None:
    jax = pytest.importorskip("jax", reason="the compile extra")
    assert jaxcompat.memory_space_name(jax.memory.Space.Host) == "Host"
    assert jaxcompat.memory_space_name(jax.memory.Space.Device) == "Device"
    assert jaxcompat.memory_space_name("pinned_host") is None


def test_the_cli_says_it_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(jaxcompat, "installed_jax", lambda: "0.13.0")
    monkeypatch.setattr(compiling, "_JAX_NOTED", False)
    monkeypatch.delenv(jaxcompat.NOTED_ENV, raising=False)
    compiling.note_jax_version()
    compiling.note_jax_version()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hloscope: note: jax 0.13.0 is outside the range")
    # the compile workers inherit the mark and stay quiet
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        jaxcompat.warn_version("0.13.0")
    assert seen == []


def test_compile_step_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jaxcompat.NOTED_ENV, raising=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        jaxcompat.warn_version("0.8.3")
        jaxcompat.warn_version("0.8.3")
    assert [type(w.message) for w in seen] == [jaxcompat.JaxVersionWarning]


@pytest.mark.parametrize(("capability", "refusal"), [
    ((9, 0), None),  # H100: head dims to 256, MLA (q/k 192, v 128) with cuDNN >= 9.10
    ((10, 0), None),  # B200 / GB200
    ((8, 0), "The head dim must be <= 128"),  # A100: what the check says on an Ampere
    ((10, 3), "Compute capability 10.3 requires cuDNN version >= 9.11"),  # GB300 with cuDNN 9.10
])
def test_cudnn_attention_is_checked_against_the_targets_gpu(capability: tuple[int, int],
                                                             refusal: str | None) -> None:
    # JAX's own check (jax._src.cudnn.fused_attention_stablehlo.check_is_flash_attention), given
    # MaxText's MLA shapes (DeepSeek-V3: q/k head 128 + 64 = 192, v head 128, layout [b, S, N, H]).
    # With no local GPU it answers as for an Ampere whatever the target; in the block, as the target.
    pytest.importorskip("jax")
    import jax
    from jax._src.cudnn import fused_attention_stablehlo as fa

    q = jax.ShapeDtypeStruct((1, 256, 4, 192), jax.numpy.bfloat16)
    v = jax.ShapeDtypeStruct((1, 256, 4, 128), jax.numpy.bfloat16)
    layout = fa.AttentionLayout.BTNH.value
    cudnn = 91000  # 9.10, MLA's floor

    def check() -> None:
        fa.check_is_flash_attention(q, q, v, layout, cudnn, has_bias=False, is_training=True)

    with pytest.raises(NotImplementedError, match="The head dim must be <= 128"):
        check()  # this machine has no GPU: refused as on an Ampere
    originals = (fa.check_compute_capability, fa.is_cuda_compute_capability_equal)
    with jaxcompat.cudnn_compute_capability(capability) as replaced:
        assert replaced
        if refusal is None:
            check()
        else:
            with pytest.raises(NotImplementedError, match=refusal):
                check()
    assert (fa.check_compute_capability, fa.is_cuda_compute_capability_equal) == originals
