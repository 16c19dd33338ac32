"""A derived card as a catalog entry: the TOML text of a [[link]] (its host link) and a
[[smartnic]] in the catalog's format, loadable with --catalog-dir and usable with --smartnic.
The text is built here; the command writes it."""

from __future__ import annotations

import json

from optimus_calc.analyses.breakeven.card import CardSpec

_CARD_KEYS = ("device_type", "cores", "core_GHz", "fp32_flops_per_cycle", "fabric_fp32_TFLOPS",
              "memory_GB", "memory_bandwidth_GBps", "memory_efficiency", "core_bandwidth_GBps",
              "expansion_memory_GB", "expansion_bandwidth_GBps", "line_rate_Gbps")
_LINK_KEYS = ("link_kind", "bandwidth_GBps", "alpha_us", "efficiency")


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(str(getattr(v, "value", v)))  # a TOML basic string


def card_name(named: str, goal: str, scale: float = 1.0) -> str:
    tail = "" if scale == 1.0 else f"-x{scale:g}".replace(".", "p")
    return f"{named}-min-{goal}{tail}"


def card_toml(spec: CardSpec, name: str, derivation: str) -> str:
    """The catalog text of ``spec`` named ``name``; ``derivation`` (the command and the goal)
    becomes the entries' source line."""
    card, link = spec.card, spec.link
    link_name = f"{name}-host-link"
    lines = ["# Derived by optimus-calc breakeven; load with --catalog-dir DIR, use with",
             f"# --smartnic {name}.", "", "[[link]]", f"name = {_value(link_name)}",
             f"title = {_value('host link of ' + name + ' (' + link.title + ')')}"]
    lines += [f"{k} = {_value(getattr(link, k))}" for k in _LINK_KEYS]
    lines += [f"source = {_value(derivation + '; from ' + link.name + ': ' + link.source)}",
              f"assumed = {_value(list(link.assumed))}", "", "[[smartnic]]",
              f"name = {_value(name)}",
              f"title = {_value('minimum card derived from ' + card.name)}"]
    for k in _CARD_KEYS:
        v = getattr(card, k)
        if v or k in ("device_type", "memory_GB", "memory_bandwidth_GBps",
                      "memory_efficiency", "line_rate_Gbps"):
            lines.append(f"{k} = {_value(v)}")
    lines += [f"host_link = {_value(link_name)}",
              f"source = {_value(f'{derivation}; other fields from {card.name}: {card.source}')}",
              f"assumed = {_value(list(card.assumed))}", ""]
    return "\n".join(lines)
