"""Pieces shared by several documents: the description of model, hardware and layout."""

from __future__ import annotations

from typing import Any

from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Offload


def model_data(model) -> dict[str, Any]:
    d: dict[str, Any] = {"name": model.name, "total_params": float(model.total_params),
                         "active_params": float(model.active_params)}
    if isinstance(model, Model):
        d.update(layers=model.layers, hidden=model.hidden, heads=model.heads,
                 kv_heads=model.n_kv, vocab=model.vocab)
    return d


def hardware_data(hw) -> dict[str, Any]:
    return {"node": hw.node.name, "nodes": hw.nodes, "gpu": hw.gpu.name,
            "gpus_per_node": hw.gpus_per_node, "gpus": hw.gpus,
            "gpu_memory_bytes": hw.gpu.memory_bytes}


def layout_data(layout) -> dict[str, Any]:
    return {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "cp": layout.cp,
            "ep": layout.ep, "zero": int(layout.zero), "offload": layout.offload.value,
            "interleave": layout.interleave, "offload_params": layout.offload_params,
            "smartnic": layout.smartnic if layout.offload is Offload.SMARTNIC else None}


def training_data(tr) -> dict[str, Any]:
    return {"seq_len": tr.seq_len, "micro_batch": tr.micro_batch,
            "global_batch": tr.global_batch, "precision": tr.precision.value,
            "optimizer": tr.optimizer.value, "bytes_per_param": {
                "weights": tr.weight_bytes, "gradients": tr.gradient_bytes,
                "optimizer": tr.optimizer_bytes},
            "recompute": tr.recompute.value, "sequence_parallel": tr.sequence_parallel,
            "flash_attention": tr.flash_attention, "dropout": tr.dropout,
            "model_states_only": tr.model_states_only}


def layout_text(layout) -> str:
    s = f"TP={layout.tp} PP={layout.pp} DP={layout.dp}"
    if layout.cp > 1:
        s += f" CP={layout.cp}"
    if layout.ep > 1:
        s += f" EP={layout.ep}"
    if layout.interleave > 1:
        s += f" interleave={layout.interleave}"
    s += f", ZeRO-{int(layout.zero)}, offload {layout.offload.value}"
    if layout.offload is Offload.SMARTNIC:
        s += f" ({layout.smartnic})"
    return s


def training_text(inp) -> str:
    tr = inp.training
    gb = f"{tr.global_batch}" + (" (default)" if inp.global_batch_defaulted else "")
    seq = f"{tr.seq_len}" + (" (model default)" if inp.seq_len_defaulted else "")
    s = (f"seq {seq}, micro-batch {tr.micro_batch}, global batch {gb}, {tr.precision.value}, "
         f"{tr.optimizer.value} ({tr.weight_bytes}+{tr.gradient_bytes}+{tr.optimizer_bytes} "
         f"bytes/param)")
    if tr.model_states_only:
        return s + ", model states only"
    return (s + f", recompute {tr.recompute.value}, SP {'on' if tr.sequence_parallel else 'off'}"
            f", FlashAttention {'on' if tr.flash_attention else 'off'}, dropout "
            f"{'on' if tr.dropout else 'off'}")
