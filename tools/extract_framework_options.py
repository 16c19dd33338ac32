#!/usr/bin/env python3
"""Extract the option lists the exporters must match from pinned framework sources.

Reads (without importing or running them) Megatron-LM's argparse flags, DeepSpeed's config
keys and torchtitan's job-config fields, and writes tests/data/framework_options.json with the
repository commits. Static (``ast``) extraction, so neither torch nor the frameworks are needed:

- Megatron-LM: every ``add_argument('--flag', ...)`` in megatron/training/arguments.py, plus
  the flags ``ArgumentGroupFactory(ConfigClass, exclude=[...])`` derives from config dataclasses
  (megatron/training/argument_utils.py: ``--field-name``; bools default False -> store_true,
  default True -> ``--no-x``/``--disable-x``; ``metadata={"argparse_meta": {...}}`` overrides).
- DeepSpeed: the pydantic config models (field names and aliases) of zero_optimization,
  offload_optimizer, offload_param, bf16, fp16, tensor_parallel; string constants and their
  ``*_DEFAULT`` types for the top-level keys, aio and activation_checkpointing.
- torchtitan: the dataclass sections of ``JobConfig`` (torchtitan/config/job_config.py).

Each source is a git directory (bare is fine) and a commit or tag (default: the commit the
framework's plug-in pins, optimus_calc/frameworks/<name>.py):

    python tools/extract_framework_options.py \\
        --megatron PATH/Megatron-LM.git d98e8a64 --deepspeed PATH/DeepSpeed.git edaa7221 \\
        --torchtitan PATH/torchtitan.git v0.2.2 -o tests/data/framework_options.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# The per-framework extractors live beside this script (tools/framework_option_parsers.py);
# running the script puts tools/ on sys.path, importing it from elsewhere needs it added.
_TOOLS = str(Path(__file__).resolve().parent)
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)
from framework_option_parsers import (Repo, extract_deepspeed, extract_megatron,  # noqa: E402
                                      extract_torchtitan)


def _source(ap, values: list[str], key: str) -> Repo:
    """GIT_DIR [REV]; REV defaults to the commit the framework's plug-in pins."""
    if len(values) > 2:
        ap.error(f"--{key} takes GIT_DIR [REV]")
    if len(values) == 2:
        return Repo(*values)
    from optimus_calc.frameworks import COMMITS
    return Repo(values[0], COMMITS[key])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for key in ("megatron", "deepspeed", "torchtitan"):
        ap.add_argument(f"--{key}", nargs="+", metavar="GIT_DIR [REV]", required=True,
                        help="git directory and revision (default: the plug-in's pinned "
                             "commit, optimus_calc.frameworks.<name>.COMMIT)")
    ap.add_argument("-o", "--output", default="tests/data/framework_options.json")
    a = ap.parse_args(argv)
    data = {
        "generated_by": "tools/extract_framework_options.py",
        "megatron": extract_megatron(_source(ap, a.megatron, "megatron")),
        "deepspeed": extract_deepspeed(_source(ap, a.deepspeed, "deepspeed")),
        "torchtitan": extract_torchtitan(_source(ap, a.torchtitan, "torchtitan")),
    }
    Path(a.output).write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {a.output}: {len(data['megatron']['flags'])} Megatron-LM flags, "
          f"{len(data['deepspeed']['zero_optimization'])} zero_optimization keys, "
          f"{len(data['torchtitan']['sections'])} torchtitan sections", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
