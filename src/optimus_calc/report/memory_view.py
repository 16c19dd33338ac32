"""Document for `optimus-calc memory`."""

from __future__ import annotations

from dataclasses import asdict

from optimus_calc.evaluate.memory import MemoryEstimate
from optimus_calc.report.common import (context_row, framework_data, framework_header,
                                        frameworks_of, hardware_data, layout_data, layout_text,
                                        model_data, training_data, training_text,
                                        add_unread_flags_note)
from optimus_calc.report.common import applied_imbalance, imbalance_applied, imbalance_note
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB, GiB


def _per_gpu(est: MemoryEstimate) -> dict:
    """The most loaded stage's bytes per GPU against the GPU's capacity."""
    w = est.worst
    return {
        "stage": w.index, "params": w.params, "weights_bytes": w.weights_bytes,
        "gradients_bytes": w.gradients_bytes, "optimizer_bytes": w.optimizer_bytes,
        "activations_bytes": w.activations_bytes, "overhead_bytes": w.overhead_bytes,
        "total_bytes": w.total_bytes, "capacity_bytes": est.capacity_bytes,
        "usable_bytes": est.usable_bytes, "headroom_bytes": est.headroom_bytes,
        "shortfall_bytes": est.shortfall_bytes,
    }


def _offload_data(est: MemoryEstimate) -> dict:
    off = est.offload
    return {
        "target": off.target.value, "device": off.device, "devices": off.devices,
        "devices_per_node": off.devices_per_node, "bytes_per_gpu": off.bytes_per_gpu,
        "bytes_per_device": off.bytes_per_device,
        "capacity_bytes_per_device": off.capacity_bytes_per_device,
        "spill_to_host_bytes_per_device": off.spill_to_host_bytes_per_device,
        "fits_on_device": off.fits_on_device, "host_bytes_per_node": off.host_bytes_per_node,
        "host_capacity_bytes_per_node": off.host_capacity_bytes_per_node,
        "devices_per_gpu_for_capacity": off.devices_per_gpu_for_capacity,
    }


def _per_gpu_table(inp, est: MemoryEstimate, unit: str, div: float) -> Table:
    w = est.worst
    g = lambda x: x / div  # noqa: E731
    rows = [
        {"part": "weights", "value": g(w.weights_bytes), "eq": "memory.weights_bytes"},
        {"part": "gradients", "value": g(w.gradients_bytes), "eq": "memory.gradients_bytes"},
        {"part": "optimizer state", "value": g(w.optimizer_bytes),
         "eq": "memory.optimizer_bytes"},
        {"part": "activations", "value": g(w.activations_bytes),
         "eq": "memory.stage_activation_bytes"},
        {"part": "overheads", "value": g(w.overhead_bytes), "eq": "memory.overhead_bytes"},
        {"part": "total", "value": g(w.total_bytes), "eq": "memory.gpu_total_bytes"},
        {"part": f"capacity ({inp.hw.gpu.name})", "value": g(est.capacity_bytes), "eq": ""},
        {"part": "usable (capacity less the --headroom margin)", "value": g(est.usable_bytes),
         "eq": ""},
        {"part": "free of usable" if est.fits or est.shortfall_bytes == 0 else "short of usable",
         "value": g(est.headroom_bytes if est.shortfall_bytes == 0 else est.shortfall_bytes),
         "eq": ""},
    ]
    return Table(
        title=f"per GPU, stage {w.index} (the most loaded of {len(est.stages)}), {unit}",
        rows=rows, columns=[Column("part", "", align="left"), Column("value", unit, ".2f"),
                            Column("eq", "equation", align="left")])


def _stages_table(est: MemoryEstimate, unit: str, div: float) -> Table:
    g = lambda x: x / div  # noqa: E731
    srows = [{"stage": s.index, "layers": s.layers, "params": s.params / 1e9,
              "states": g(s.weights_bytes + s.gradients_bytes + s.optimizer_bytes),
              "acts": g(s.activations_bytes), "in_flight": s.micro_batches_in_flight,
              "total": g(s.total_bytes)} for s in est.stages]
    return Table(title="pipeline stages", rows=srows, columns=[
        Column("stage", "stage"), Column("layers", "layers"),
        Column("params", "params (B)", ".3f"), Column("states", f"states {unit}", ".2f"),
        Column("acts", f"activations {unit}", ".2f"), Column("in_flight", "in flight"),
        Column("total", f"total {unit}", ".2f")])


def _offload_table(est: MemoryEstimate, unit: str, div: float) -> Table:
    off = est.offload
    g = lambda x: x / div  # noqa: E731
    orows = [
        {"k": "device", "v": off.device},
        {"k": "devices (cluster / per node)", "v": f"{off.devices} / {off.devices_per_node}"},
        {"k": f"offloaded per GPU ({unit})", "v": f"{g(off.bytes_per_gpu):.2f}"},
        {"k": f"per device ({unit})", "v": f"{g(off.bytes_per_device):.2f}"},
        {"k": f"capacity per device ({unit})", "v": f"{g(off.capacity_bytes_per_device):.2f}"},
        {"k": "fits on device", "v": "yes" if off.fits_on_device else "no"},
    ]
    if off.spill_to_host_bytes_per_device:
        orows.append({"k": f"spill to host per device ({unit})",
                      "v": f"{g(off.spill_to_host_bytes_per_device):.2f}"})
    if off.devices_per_gpu_for_capacity:
        orows.append({"k": "devices per GPU to hold the shard",
                      "v": str(off.devices_per_gpu_for_capacity)})
    return Table(title=f"offload: {off.target.value}", rows=orows, columns=[
        Column("k", "", align="left"), Column("v", "", align="left")])


def memory_document(inp, est: MemoryEstimate, binary: bool = False, fit=None) -> Document:
    """``fit``: (fits, analyses.fit_hint.FitHint or None) from the command (step_view)."""
    from optimus_calc.analyses.fit_hint import report_parts
    hint = report_parts(fit, inp)
    unit, div = ("GiB", GiB) if binary else ("GB", GB)
    per_gpu, offload = _per_gpu(est), _offload_data(est)
    data = {
        "model": model_data(inp.model), "hardware": hardware_data(inp.hw),
        "layout": layout_data(inp.layout), "training": training_data(inp.training),
        "assumptions": dict(inp.assumptions),
        **applied_imbalance(inp.model, inp.assumptions, inp.layout),
        "model_states_total_bytes": est.model_states_total_bytes,
        "micro_batches": est.micro_batches,
        "per_gpu": per_gpu, "offload": offload,
        "stages": [{k: v for k, v in asdict(s).items() if k != "inputs"} for s in est.stages],
        "fits": est.fits, "reasons": est.reasons, "notes": est.notes,
        "fit_hint": hint.data,
    }
    fws, fw_note = frameworks_of(inp)
    data["frameworks"] = fws
    data.update(framework_data(inp))
    tables = [_per_gpu_table(inp, est, unit, div)]
    if len(est.stages) > 1:
        tables.append(_stages_table(est, unit, div))
    if est.offload.target is not Offload.NONE:
        tables.append(_offload_table(est, unit, div))
    csv_row = {**context_row(inp.model.name, inp.hw, inp.training),
               **{k: v for k, v in layout_data(inp.layout).items()},
               "micro_batch": inp.training.micro_batch,
               "recompute": inp.training.recompute.value,
               **applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True),
               "stage_layers": [s.layers for s in est.stages],
               **{f"gpu_{k}": v for k, v in per_gpu.items()},
               **{f"offload_{k}": v for k, v in offload.items()},
               "fits": est.fits, "reasons": est.reasons,
               **hint.columns}
    csv = Table(title="", rows=[csv_row], columns=[Column(k, k) for k in csv_row])
    verdict = "fits" if est.fits else "DOES NOT FIT"
    notes = [f"{verdict}" + (f": {'; '.join(est.reasons)}" if est.reasons else "")] + est.notes
    if hint.note:
        notes.insert(1, hint.note)
    if fw_note:
        notes.append(fw_note)
    add_unread_flags_note(inp, notes, data)
    tr, asm = inp.training, inp.assumptions
    if getattr(inp.model, "is_moe", False) and asm.moe_imbalance != 1:
        iota = imbalance_applied(inp.model, asm, inp.layout)
        if iota > 1:
            notes.append(f"the most-loaded expert-parallel rank keeps its routed experts' "
                         f"activations at {iota:g}x the balanced share (--moe-imbalance;"
                         " memory.activation_layer_bytes' (iota - 1) x_c)")
        notes += imbalance_note(inp.model, asm, inp.layout)
    notes.append(f"model states in total: {est.model_states_total_bytes / div:.1f} {unit} "
                 f"({tr.weight_bytes + tr.gradient_bytes + tr.optimizer_bytes}"
                 f" bytes x {inp.model.total_params / 1e9:.2f}B params)")
    return Document(
        title=f"memory: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name} "
              f"({inp.hw.gpus} x {inp.hw.gpu.name})",
        header=[("layout", layout_text(inp.layout)), *framework_header(inp),
                ("training", training_text(inp))],
        data=data, tables=tables, notes=notes, csv=csv, plot="memory")

