"""The built-in targets' data files (hloscope/targets/data/*.toml): every figure has its source, and a
bad data file is one line naming the file, the target and the key (exit 70: a bug in hloscope's own
data), from the loader and from the CLI, never a traceback."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_INTERNAL, HloscopeError
from hloscope.targets import BUILTIN_TARGETS, builtin
from hloscope.targets.builtin import DATA, read_builtins

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of the data files to break."""
    folder = tmp_path / "data"
    shutil.copytree(Path(str(DATA)), folder)
    return folder


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))


def test_every_figure_cites_a_named_source_and_every_source_is_cited() -> None:
    # Read the files themselves: each target table's values other than its words are {value, source}.
    for path in sorted(Path(str(DATA)).glob("*.toml")):
        data = tomllib.loads(path.read_text())
        cited = set()
        for name, table in data["targets"].items():
            for key, v in table.items():
                if key in ("description", "host_link", "host_map_source", "aliases"):
                    continue
                assert set(v) == {"value", "source"}, (path.name, name, key)
                assert v["source"] in data["sources"] and len(data["sources"][v["source"]]) > 20
                cited.add(v["source"])
        cited |= {v["source"] for v in data.get("defaults", {}).values() if isinstance(v, dict)}
        assert cited == set(data["sources"]), path.name


def test_the_copy_reads_back_the_same_targets(data: Path) -> None:
    got = read_builtins(data)
    assert got.targets == dict(BUILTIN_TARGETS) and got.aliases["ironwood"] == "tpu7x"


@pytest.mark.parametrize(("file", "old", "new", "says"), [
    ("gpu.toml", "hbm_bandwidth = { value = 3.35e12, source = \"h100-datasheet\" }", "hbm_bandwidth = 3.35e12",
     "targets.h100-sxm: figure 'hbm_bandwidth' needs its source"),
    ("gpu.toml", "source = \"xla-h100-spec\" }", "source = \"xla-h100\" }",
     "targets.h100-sxm: figure 'compute_capability' cites 'xla-h100', which [sources] does not name"),
    ("gpu.toml", "value = 3.35e12", "value = -3.35e12",
     "targets.h100-sxm: target field 'hbm_bandwidth' must be a positive number, not -3350000000000.0"),
    ("gpu.toml", "value = 132,", "value = 13.2,",
     "targets.h100-sxm: target field 'core_count' must be a positive integer, not 13.2"),
    ("tpu.toml", "value = 0.80,", "value = 1.5,",
     "targets.tpu-v5e: target field 'hbm_efficiency' must be a share above 0 and at most 1, not 1.5"),
    ("tpu.toml", "value = 14.74e9,", "value = 15.74e9,",
     "targets.tpu-v5e: target field 'host_link_achieved_to_host' must be at most host_link_to_host (1.5e+10)"),
    ("tpu.toml", "[targets.tpu-v4]\n", "[targets.tpu-v4]\ncore_count = { value = 1, source = \"gcloud-v4\" }\n",
     "targets.tpu-v4: unknown field(s): core_count"),
    ("tpu.toml", "generation = { value = \"v4\", source = \"gcloud-v4\" }\n", "",
     "targets.tpu-v4: missing generation"),
    ("gpu.toml", "[targets.h200]", "[targets.h200", "not a valid data file"),
    ("tpu.toml", "\n[sources]\n", "\n[sources]\nnever-cited = \"a source no figure cites, for this test\"\n",
     "source(s) no figure cites: never-cited"),
    ("gpu.toml", 'direction = "to_host", per_gpu = 297e9', 'direction = "up", per_gpu = 297e9',
     "measured.host_link[0]: direction must be Direction, not 'up'"),
    ("gpu.toml", 'target = "gb200", direction = "to_host", per_gpu = 155e9',
     'target = "gb200", direction = "to_host", per_gpu = -155e9',
     "measured.host_link[8]: per_gpu must be a positive float, not -155000000000.0"),
    ("gpu.toml", '{ target = "h100-sxm", gpu', '{ target = "h100", gpu',
     "measured.copy_engines[2]: target 'h100' is not a target of this file"),
    ("tpu.toml", "\n[sources]\n", '\n[measured]\nhost_link = []\n[sources]\n',
     "measured: holds only the tables (none)"),
])
def test_a_bad_data_file_is_one_line_naming_where(data: Path, file: str, old: str, new: str, says: str) -> None:
    _edit(data / file, old, new)
    with pytest.raises(HloscopeError) as e:
        read_builtins(data)
    assert e.value.exit_code == EXIT_INTERNAL
    assert str(e.value).startswith(f"{data / file}: ") and says in str(e.value) and "\n" not in str(e.value)


def test_the_cli_says_a_bad_data_file_in_one_line(data: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Given hloscope's GPU data file with a bandwidth that is not a number, read afresh
    _edit(data / "gpu.toml", "value = 4.8e12", "value = \"fast\"")
    monkeypatch.setattr(builtin, "DATA", data)
    builtin.builtins.cache_clear()
    try:
        # When a user lists the targets, or analyzes a step on the default target
        codes = [main(["targets"]), main(["analyze", str(ROOT / "fixtures" / "mlp_offload.hlo.txt")])]
    finally:
        builtin.builtins.cache_clear()
    # Then each run is one line, exit 70, naming the file, the target and the key
    err = capsys.readouterr().err.splitlines()
    assert codes == [EXIT_INTERNAL, EXIT_INTERNAL]
    assert err == [f"hloscope: error: {data / 'gpu.toml'}: targets.h200: target field 'hbm_bandwidth' must be a "
                   "positive number, not 'fast'"] * 2


def test_pyproject_ships_the_data_files() -> None:
    # A non-editable install copies package data only where pyproject's package-data names it.
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["hloscope"]
    shipped = {p for pattern in conf for p in (ROOT / "hloscope").glob(pattern)}
    assert set((ROOT / "hloscope" / "targets" / "data").glob("*.toml")) <= shipped
    assert {p.stem for p in (ROOT / "hloscope" / "targets" / "data").glob("*.toml")} == {"gpu", "tpu"}
