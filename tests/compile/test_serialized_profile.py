"""The serialized profile on the step whose host copies drain one after another, compiled here.

The JAX host-offloading guide's optimizer-state offload (Adam moments in pinned host memory),
as ``fixtures/generate_streams.py`` compiles it (h100-sxm, 8 GPUs). Its eight D->H write-backs
drain in series (``tests/analysis/simulate/test_drain.py``). Given to XLA as its profile with those copies
priced as they run behind each other, the second compile must be scheduled with it (XLA's log
names the file) and must still hold every write-back; what the schedule becomes is printed by
``compile --what-if-profile`` and measured in docs/simulation.md, not asserted here.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xla_versions import MEMORY_KINDS

from fixtures.generate_streams import opt_state_offload_step

pytestmark = pytest.mark.xla


@MEMORY_KINDS
def test_xla_schedules_with_the_serialized_profile(tmp_path: Path) -> None:
    import hloscope
    from hloscope.render.pgle import write_profile

    step, args, kw = opt_state_offload_step()
    _, before = hloscope.compile_step(step, *args, **kw)
    assert before.drains, "the write-backs drain in series in this compile too"
    buf = io.StringIO()
    write_profile(before, buf, serialized=True)
    path = tmp_path / "model-profile-serialized.pbtxt"
    path.write_text(buf.getvalue(), encoding="utf-8")
    _, after = hloscope.compile_step(step, *args, flags={"xla_gpu_pgle_profile_file_or_directory_path": str(path)},
                                     **kw)
    assert after.xla is not None and after.xla.profile is not None and Path(after.xla.profile) == path
    written = {s for d in before.drains if d.direction.value == "to_host" for s in d.starts}
    assert sum(t.direction.value == "to_host" for t in after.transfers) == len(written) == 8
