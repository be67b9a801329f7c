"""The core (parser, analyses, rules, renderers, CLI analyze) imports neither JAX nor Textual."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import FIXTURES


def test_core_imports_no_jax_or_ui() -> None:
    code = (
        "import sys\n"
        "import hloscope, hloscope.hlo, hloscope.analysis, hloscope.render, hloscope.targets, hloscope.check\n"
        f"r = hloscope.analyze({str(FIXTURES / 'mlp_offload.hlo.txt')!r})\n"
        "from hloscope.check import fail_on_verdicts, parse_verdicts\n"
        "fail_on_verdicts(r, parse_verdicts('exposed,sync'))\n"
        "r.to_text(); r.to_dict()\n"
        "from hloscope.cli.main import main\n"
        f"assert main(['analyze', {str(FIXTURES / 'mlp_offload.hlo.txt')!r}, '-o', '/dev/null']) == 0\n"
        f"main(['analyze', {str(FIXTURES / 'mlp_offload.hlo.txt')!r}, '-o', '/dev/null', '--fail-on', 'sync'])\n"
        f"assert main(['check', {str(FIXTURES / 'mlp_offload.hlo.txt')!r}, '--no-sync', '-o', '/dev/null']) == 0\n"
        f"assert main(['dot', {str(FIXTURES / 'mlp_offload.hlo.txt')!r}, '--calls', '-o', '/dev/null', '--format', 'dot']) == 0\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'textual'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_corpus_checks_of_the_fast_tier_need_no_jaxlib() -> None:
    # tests/hlo/test_xla_corpus.py reads XLA's verdicts from the manifest; only tests/xla/ asks jaxlib.
    code = ("import sys\n"
            "import tests.hlo.test_xla_corpus, tests.hlo.test_parser_gaps\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=FIXTURES.parent)
    assert out.stdout.strip() == "[]", out.stdout
