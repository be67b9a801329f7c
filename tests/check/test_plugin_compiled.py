"""The pytest plugin on a step compiled in the test (marked ``xla``: a deviceless compile)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.xla
def test_a_compiled_step_is_labelled_with_the_test(pytester: pytest.Pytester) -> None:
    # Given a marked test that returns hloscope.compile_step's (result, report) for a 2-layer mlp, with a
    # rule it breaks (it offloads 2 x 16 KiB per device, not 1 TiB), so the report is attached
    pytester.makepyfile("""
        import hloscope
        import pytest
        from hloscope.compile.step.deviceless import make_mesh
        from hloscope.compile.workloads import resolve

        @pytest.mark.hloscope(min_offloaded_bytes="1TiB")
        def test_compiled():
            wl, cfg = resolve("mlp", {"layers": "2"})
            mesh = make_mesh("h100-sxm", 8)
            fn, args = wl.build(cfg, mesh)
            return hloscope.compile_step(fn, *args, mesh=mesh)
    """)
    # When pytest runs it (its own process: a compile wants a fresh JAX)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:textual-snapshot")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # Then the check and the attached report are named after the test, never "<text>"
    result.stdout.fnmatch_lines(["hloscope check: test_a_compiled_step_is_labelled_with_the_test.py::test_compiled, *",
                                 "*FAIL min-offloaded-bytes*",
                                 "*hloscope report: test_a_compiled_step_is_labelled_with_the_test.py::test_compiled*"])
    assert "<text>" not in out, out
