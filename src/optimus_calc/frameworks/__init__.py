"""Training frameworks as plug-ins: one module per framework (deepspeed, megatron,
megatron_deepspeed, torchtitan) holds its pinned commit, its rules as rows (predicate, text,
source file and line), its launch path and environment, its exporter and its physics profile.

Registering a framework is one line below; the CLI's ``--framework`` and ``--export`` choices,
the planner's rules and the rejection counts come from the registry (:mod:`.registry`).
SmartNIC offload (OptimusNIC) is a research prototype that no framework runs: it stays a what-if.
"""

from __future__ import annotations

from optimus_calc.frameworks import deepspeed, megatron, megatron_deepspeed, torchtitan
from optimus_calc.frameworks.base import (OFF_CPU, OFF_NONE, OFF_NVME, OFF_SMARTNIC,
                                          OFF_SUPERCHIP, EnvVar, Exporter, FrameworkPlugin,
                                          Layouts, PhysicsProfile, Rule)
from optimus_calc.frameworks.registry import (FrameworkSupport, framework_support,
                                              layout_support, layouts_support, model_refusals,
                                              offload_refusals, plugin, plugins, register,
                                              rejected_counts)

register(deepspeed.PLUGIN)
register(megatron.PLUGIN)
register(megatron_deepspeed.PLUGIN)
register(torchtitan.PLUGIN)

from optimus_calc.frameworks.registry import enums  # noqa: E402  (after registration)

Framework, Reason, Export = enums()

COMMITS: dict[str, str] = {p.key: p.commit for p in plugins()}


def export_choices() -> list[str]:
    """The ``--export`` names, from the registered exporters."""
    return [p.exporter.name for p in plugins() if p.exporter]


def exports_for(frameworks) -> list[str]:
    """The --export names that write a configuration for any of ``frameworks`` (keys)."""
    keys = {str(getattr(f, "value", f)) for f in frameworks}
    names = [p.exporter.name if p.exporter else p.exported_by for p in plugins()
             if p.key in keys and (p.exporter or p.exported_by)]
    return list(dict.fromkeys(n for n in export_choices() if n in names))


def exported_frameworks(name: str) -> list[str]:
    """The framework keys ``--export NAME`` writes a configuration for (its plug-in's and those
    its exporter covers, e.g. Megatron-DeepSpeed under deepspeed)."""
    return [p.key for p in plugins()
            if (p.exporter and p.exporter.name == name) or p.exported_by == name]


def exporter(name: str) -> Exporter:
    for p in plugins():
        if p.exporter and p.exporter.name == str(getattr(name, "value", name)):
            return p.exporter
    raise KeyError(name)


__all__ = ["COMMITS", "EnvVar", "Export", "Exporter", "Framework", "FrameworkPlugin",
           "FrameworkSupport", "Layouts", "OFF_CPU", "OFF_NONE", "OFF_NVME", "OFF_SMARTNIC",
           "OFF_SUPERCHIP", "PhysicsProfile", "Reason", "Rule", "export_choices", "exporter",
           "exports_for", "framework_support", "layout_support", "layouts_support",
           "model_refusals", "offload_refusals", "plugin", "plugins", "register",
           "rejected_counts"]
