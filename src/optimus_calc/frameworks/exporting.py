"""What every exporter shares: the refusal error, the rule check, the batch arithmetic and the
environment lines.

Exporters are pure functions (layout, training, model, GPUs per node) -> text, one next to each
framework's module. Each refuses, with an :class:`ExportError` naming the rule and its source, a
layout its framework cannot run (the rule rows of the framework's module). Option names are
checked in tests against the option lists extracted from the pinned framework commits
(tests/data/framework_options.json, tools/extract_framework_options.py).
"""

from __future__ import annotations

from optimus_calc.errors import InputError
from optimus_calc.frameworks import Framework, Reason, layout_support, plugin


class ExportError(InputError):
    """The layout cannot be written for this framework (one line, exit status 2)."""


def require(layout, training, model, *frameworks: Framework) -> Framework:
    """The first of ``frameworks`` that runs the layout, else ExportError with the reasons."""
    support = layout_support(layout, training, model)
    for f in frameworks:
        if support[f] is Reason.OK:
            return f
    why = "; ".join(dict.fromkeys(support[f].text for f in frameworks))
    from optimus_calc.frameworks.registry import rule_of
    whole = [support[f] is Reason.SMARTNIC or rule_of(support[f]).on_model
             or rule_of(support[f]).on_run for f in frameworks]
    hint = "" if any(whole) else (
        f" (plan with --framework {','.join(f.value for f in frameworks)} to search only "
        "layouts it runs)")
    raise ExportError(f"cannot export this layout for {frameworks[0].label}: {why}{hint}")


def grad_accumulation(layout, training) -> int:
    """Micro-batches per step per data-parallel replica: global = micro x dp x accumulation."""
    per_step = training.micro_batch * layout.dp
    if training.global_batch % per_step:
        raise ExportError(f"global batch {training.global_batch} is not a multiple of micro-batch "
                          f"{training.micro_batch} x data-parallel {layout.dp}")
    return training.global_batch // per_step


def environment_lines(layout, *frameworks) -> list[str]:
    """``export NAME=value`` / ``unset NAME`` lines, each with its reason, for the launch."""
    out = []
    for f in frameworks:
        for e in plugin(f).environment(layout):
            line = f"unset {e.name}" if e.value is None else f"export {e.name}={e.value}"
            out.append(f"{line}  # {e.why}")
    return out


# GPUs per node when a caller names none (the CLI always passes the hardware's): an 8-GPU
# HGX/DGX board, the node of every GPU server in the catalog's default hardware
DEFAULT_GPUS_PER_NODE = 8


def node_split(gpus: int, gpus_per_node: int | None) -> tuple[int, int]:
    """(GPUs per node, nodes) of the launch line: ``gpus`` over nodes of ``gpus_per_node``."""
    gpn = gpus_per_node or min(gpus, DEFAULT_GPUS_PER_NODE)
    return gpn, max(1, gpus // gpn)
