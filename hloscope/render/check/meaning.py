"""What each check rule and setting means, in one sentence: for ``hloscope check --help``, the
check text and Markdown formats, the pytest marker's help and the docs (docs/ci.md)."""

from __future__ import annotations

RULE_MEANING: dict[str, str] = {
    "no-sync": "no transfer is synchronous (the compute would wait for it)",
    "no-exposed": "no async transfer is exposed (nothing scheduled to hide it)",
    "max-exposed-us": "at most this many estimated microseconds of exposed transfer time per step",
    "max-exposed-fraction": "the step waits on host transfers (exposed and partial ones) at most this fraction of "
                            "its estimated time (compute + that wait); 0.1 in the default gate",
    "min-hidden-fraction": "at least this fraction of the estimated transfer time is hidden",
    "expect-offloaded": "each name (checkpoint name or op label; shell patterns) is offloaded to host",
    "min-offloaded-bytes": "at least this many bytes per step are offloaded to host",
    "annotations-accounted": "every host-placement annotation of the unoptimized module became an async transfer "
                             "(not a synchronous copy, not removed)",
    "intent-accounted": "every offload the step asked for became host transfers (on when the step was traced; a "
                        "plain HLO file falls back to its unoptimized module's annotations)",
    "preset-names-tagged": "every name a framework's preset offloads (MaxText's remat_policy) is tagged by the model "
                           "(off by default: intent-accounted reports such a name but does not fail on it)",
    "fits-hbm": "the step's device allocation fits in the target's HBM, less hbm-margin",
    "fits-host-pool": "the step's pinned-host bytes per GPU fit in PJRT's pinned-host pool (host-pool-gb, "
                      "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB, default 64 GiB)",
    "min-margin": "no transfer's verdict flips within this factor of the host link's bandwidth or of the step's "
                  "work time (1.5: a 1.5x slower link or 1.5x faster compute must not change it; docs/verdicts.md)",
    "max-marginal-us": "no transfer costs the simulated step more than this many microseconds (its marginal cost: "
                       "the step with that transfer free)",
    "no-unread-host-writes": "every byte written to host is read back: no slot of a host stack that no reload indexes, "
                             "no copy to host whose result nothing reads",
    "max-call-host-us": "at most this many microseconds of host work per call: the runtime maps the step's new "
                        "pinned-host outputs for DMA before the program starts (outputs not aliased to a donated "
                        "argument; the target's measured figure, docs/accuracy.md)",
}

SETTING_MEANING: dict[str, str] = {
    "target": "GPU or TPU target name or .toml/.json file for the estimates",
    "hbm-margin": "fits-hbm: share of HBM to keep free (0.05 = 5%)",
    "host-pool-gb": "fits-host-pool: PJRT's pinned-host pool per process, GiB (default: "
                    "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB from the environment, else 64)",
    "allow-empty": "pass when there is nothing to check (unscheduled module, no host transfer)",
    "baseline": "JSON report to compare with; regressions fail the check",
    "tolerance-us": "baseline: growth of exposed time per step (us) that is not a regression",
    "tolerance-fraction": "baseline: the same, relative to the baseline's figure",
    "memory-tolerance": "baseline: growth of the device allocation that is not a regression",
    "path": "HLO file, XLA dump folder or hloscope artifact folder to check",
    "unoptimized": "the unoptimized module (for annotations-accounted) when PATH is a plain file",
    "workload": "built-in workload or preset to compile and check",
    "fn": "your step function, package.module:function, to compile and check",
    "args": "with fn: abstract arguments, as for hloscope compile --args",
    "devices": "compile-only devices (GPUs, or TPU chips) for workload / fn / maxtext",
    "memory-fraction": "compile workload / fn as JAX on a GPU whose allocator takes this share of the HBM "
                       "(XLA_PYTHON_CLIENT_MEM_FRACTION); fits-hbm then checks against it",
    "set": "workload settings, e.g. {layers = 2, batch = 4}",
    "maxtext": "MaxText's own step to compile and check: [CONFIG.yml,] KEY=VALUE overrides as --maxtext takes "
               "them, e.g. [\"model_name=llama3.1-8b\", \"remat_policy=qkv_proj_offloaded\"] (docs/maxtext.md)",
    "allow": "list of {checkpoint|instruction|source = pattern, reason = why, rules = [...]}",
}


def rule_meaning(name: str) -> str:
    """The rule's sentence ("" for a rule with none yet: the completeness test fails on it)."""
    return RULE_MEANING.get(name, "")


def setting_meaning(name: str) -> str:
    """The setting's sentence ("" for a setting with none yet: the completeness test fails on it)."""
    return SETTING_MEANING.get(name, "")
