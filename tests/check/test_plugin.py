"""The pytest plugin, run by pytester in-process: the marker, the fixture, the helpers, on both sides
of each threshold (limits derived from the fixture's own report), plus a fresh venv (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from check_helpers import DATA, FIXTURES, fixture_report

pytest_plugins = ["pytester"]

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")
MLP = str(FIXTURES / "mlp_offload_nopipe.hlo.txt")
MLP_NOLHS = str(FIXTURES / "mlp_offload_nolhs.hlo.txt")  # two exposed transfers (docs/cost-model.md)


def run_inner(pytester: pytest.Pytester) -> pytest.RunResult:
    # textual's snapshot plugin keeps one temp folder per process; an inner session would remove it.
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:textual-snapshot")


def _exposed_per_step(name: str) -> float:
    return sum(v.est_exposed_us * v.transfer.executions for v in fixture_report(name).verdicts)


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--markers", "-p", "no:textual-snapshot")
    result.stdout.fnmatch_lines(["*@pytest.mark.hloscope(no_sync=..., no_exposed=...*"])


def test_marker_on_a_returned_step_both_sides_of_max_exposed_us(pytester: pytest.Pytester) -> None:
    total = _exposed_per_step("llama_offload.hlo.txt")
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(max_exposed_us={total * 1.01!r})
        def test_under():
            return {LLAMA!r}

        @pytest.mark.hloscope(max_exposed_us={total * 0.99!r})
        def test_over():
            return {LLAMA!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAIL max-exposed-us*", "*of exposed transfer time per step*allowed*",
                                 "*hloscope report*", "*dynamic-slice-start.2.0*"])
    assert "PytestReturnNotNoneWarning" not in result.stdout.str()


def test_marker_no_exposed_and_no_sync_with_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(no_sync=True, no_exposed=True)
        def test_exposed(hloscope_step):
            report = hloscope_step({LLAMA!r})
            assert report.summary.transfers == 9

        @pytest.mark.hloscope(no_sync=True)
        def test_sync(hloscope_step):
            hloscope_step({str(DATA / "mlp_sync")!r})

        @pytest.mark.hloscope(no_sync=True, fits_hbm=True)
        def test_async_fits(hloscope_step):
            hloscope_step({str(FIXTURES / "mlp_offload.hlo.txt")!r})
    """)
    result = run_inner(pytester)
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "FAIL no-exposed" in out and "overlapped by: nothing that does work" in out
    assert "FAIL no-sync" in out and "loop_dynamic_update_slice_fusion.3" in out
    assert "fits-hbm cannot be evaluated" in out  # a plain HLO file has no memory figures: never a pass


def test_marker_min_hidden_fraction_both_sides_and_allow(pytester: pytest.Pytester) -> None:
    report = fixture_report("llama_offload.hlo.txt")
    frac = (sum(max(0.0, v.est_transfer_us - v.est_exposed_us) * v.transfer.executions for v in report.verdicts)
            / sum(v.est_transfer_us * v.transfer.executions for v in report.verdicts))
    allow = [{"instruction": v.transfer.instruction.name, "reason": "known"}
             for v in report.verdicts if v.verdict == "exposed"]
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(min_hidden_fraction={frac * 0.99!r})
        def test_enough():
            return {LLAMA!r}

        @pytest.mark.hloscope(min_hidden_fraction={min(1.0, frac * 1.01)!r})
        def test_not_enough():
            return {LLAMA!r}

        @pytest.mark.hloscope(no_exposed=True, allow={allow!r})
        def test_allowed():
            return {LLAMA!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_not_enough*", "*FAIL min-hidden-fraction*"])


def test_marker_errors_and_empty_steps_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(no_snyc=True)
        def test_typo():
            return {LLAMA!r}

        @pytest.mark.hloscope()
        def test_nothing_returned():
            pass

        @pytest.mark.hloscope()
        def test_no_transfer():
            return {str(FIXTURES / "mlp_remat.hlo.txt")!r}

        @pytest.mark.hloscope(allow_empty=True)
        def test_no_transfer_allowed():
            return {str(FIXTURES / "mlp_remat.hlo.txt")!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert "unknown keyword(s) no_snyc" in out and "returned no step" in out and "nothing to check" in out
    # the typo's failure prints its message once (not again "during handling of the above exception");
    # the short summary may repeat it (in full where CI is set)
    failures = out.split("short test summary info")[0]
    assert failures.count("valid: no_sync, no_exposed") == 1 and "During handling" not in out


def test_a_failing_test_body_is_reported_as_itself_and_not_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(no_exposed=True)
        def test_body_fails():
            assert 1 + 1 == 3, "the test's own assert"
            return {LLAMA!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "the test's own assert" in out and "FAIL no-exposed" not in out and "hloscope report" not in out


def test_a_step_given_as_text_is_labelled_with_the_test(pytester: pytest.Pytester) -> None:
    # Given tests that return HLO text (no file name), one valid and exposed, one damaged
    pytester.makepyfile(f"""
        import pathlib
        import pytest

        @pytest.mark.hloscope(no_exposed=True)
        def test_text():
            return pathlib.Path({LLAMA!r}).read_text()

        @pytest.mark.hloscope(no_exposed=True)
        def test_damaged(hloscope_step):
            hloscope_step("HloModule m\\n\\nENTRY e {{\\n  p = f32[2 parameter(0)\\n}}\\n")
    """)
    result = run_inner(pytester)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # Then the check, the attached report and the parse error name the test, never "<text>"
    assert "<text>" not in out
    result.stdout.fnmatch_lines(["hloscope check: test_a_step_given_as_text_is_labelled_with_the_test.py::test_text, "
                                 "target h100-sxm: FAILED*",
                                 "*hloscope report: test_a_step_given_as_text_is_labelled_with_the_test.py::test_text*",
                                 "hloscope report: test_a_step_given_as_text_is_labelled_with_the_test.py::test_text: "
                                 "module jit_step*"])
    assert "test_a_step_given_as_text_is_labelled_with_the_test.py::test_damaged:4:" in out


def test_marker_honours_the_projects_allow_list(pytester: pytest.Pytester) -> None:
    # Given the fixture's exposed transfers (read from its report), and a pyproject that allows all but one
    exposed = sorted(v.transfer.instruction.name for v in fixture_report("mlp_offload_nolhs.hlo.txt").verdicts
                     if v.verdict == "exposed")
    assert len(exposed) >= 2
    entries = "".join(f'[[tool.hloscope.allow]]\ninstruction = "{name}"\nreason = "known"\n\n' for name in exposed)
    pytester.makefile(".toml", pyproject=f"[tool.hloscope]\nno-sync = true\n\n{entries}")
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(no_exposed=True)
        def test_all_allowed():
            return {MLP_NOLHS!r}
    """)
    # When every exposed transfer is allowed in pyproject.toml, Then the marked test passes
    run_inner(pytester).assert_outcomes(passed=1)
    # When the pyproject allows one fewer, Then the one left fails the test, and the others read as allowed
    entries = "".join(f'[[tool.hloscope.allow]]\ninstruction = "{name}"\nreason = "known"\n\n'
                      for name in exposed[1:])
    pytester.makefile(".toml", pyproject=f"[tool.hloscope]\n{entries}")
    result = run_inner(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FAIL no-exposed*", f"*- {exposed[0]} *"])
    assert all(f"- {name} " not in result.stdout.str().split("FAIL no-exposed")[1].split("allowed")[0]
               for name in exposed[1:])


def test_a_bad_project_allow_list_fails_the_marked_test_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject='[[tool.hloscope.allow]]\ninstruction = "x"\n')
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(no_sync=True)
        def test_step():
            return {LLAMA!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(failed=1)
    assert "pyproject.toml [tool.hloscope]: allow[0]: every allow entry needs a reason" in result.stdout.str()


def test_helpers_for_plain_asserts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import hloscope

        def test_hidden():
            hloscope.assert_offloads_hidden({MLP!r}, max_exposed_us=1e9)

        def test_exposed():
            hloscope.assert_offloads_hidden({LLAMA!r})
    """)
    result = run_inner(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*OffloadCheckFailed*", "*FAIL no-exposed*"])


def test_baseline_in_the_marker(pytester: pytest.Pytester) -> None:
    import json

    from hloscope.render.json_report import report_to_dict

    base = pytester.path / "baseline.json"
    base.write_text(json.dumps(report_to_dict(fixture_report("llama_offload_nopipe.hlo.txt"))))
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.hloscope(baseline="baseline.json", max_exposed_us=1e9)
        def test_same():
            return {str(FIXTURES / "llama_offload_nopipe.hlo.txt")!r}

        @pytest.mark.hloscope(baseline="baseline.json", max_exposed_us=1e9)
        def test_changed():
            return {LLAMA!r}
    """)
    result = run_inner(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*REGRESSION*"])


@pytest.mark.slow
def test_fresh_project_that_only_pip_installed_hloscope(tmp_path: Path) -> None:
    # Given a new venv (no jax) that sees this environment's site-packages only for
    # hloscope's dependencies, with hloscope pip-installed from the repository
    repo = Path(__file__).resolve().parents[2]
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies (networkx, rich, pytest ...) from this interpreter, hloscope itself installed fresh
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "deps.pth").write_text("\n".join(deps) + "\n")
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(repo)],
                   check=True, capture_output=True)
    wheel = next(wheel_dir.glob("hloscope-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", site, str(wheel)],
                   check=True, capture_output=True)
    project = tmp_path / "project"
    project.mkdir()
    (project / "step.hlo.txt").write_text((FIXTURES / "llama_offload.hlo.txt").read_text())
    (project / "test_step.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.hloscope(no_sync=True)\n"
        "def test_no_sync():\n    return 'step.hlo.txt'\n\n"
        "@pytest.mark.hloscope(no_exposed=True)\n"
        "def test_no_exposed():\n    return 'step.hlo.txt'\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    # When pytest runs there, Then the entry point loads the plugin and the marker checks the step
    out = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                         capture_output=True, text=True, env=env)
    where = subprocess.run([str(py), "-c", "import hloscope; print(hloscope.__file__)"], cwd=project,
                           capture_output=True, text=True, env=env).stdout
    assert where.startswith(site), where
    assert "1 failed, 1 passed" in out.stdout, out.stdout + out.stderr
    assert "FAIL no-exposed" in out.stdout
