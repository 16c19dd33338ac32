"""OptimusNIC's overlap as a per-layer pipeline (seeds/optimusnic.md section 5).

The seed: "gradients are aggregated layer by layer meaning each model layer's gradients are sent
for aggregation once its backward pass is complete, the optimizer step can be executed on
OptimusNIC immediately after aggregation. This approach allows overlapping not only gradient
communication and computation but also the optimizer step itself."

Each layer of a pipeline stage therefore travels through three stages, each on its own resource:

- gradient in: GPU -> card, over the GPU's link and the card's host link (the slower sets the
  pace; the card's link also carries the part of the optimizer state that spilled to host RAM,
  read before the update);
- update: the card's optimizer roofline (compute.optimizer_step_time: memory bandwidth, cores x
  per-core bandwidth, FLOPs) over the parameters of every GPU it serves;
- weights out: card -> GPU over the same links in the other direction (PCIe is full duplex), the
  card's link also writing the spilled state back to host RAM.

Layers follow one another through these stages, so the stages overlap: the step's layers take
the slowest stage's whole time plus one layer's passage through the others (fill and drain),
the textbook pipeline time (n - 1) x slowest + sum of one item's stages with n = the layers.
That time overlaps the last micro-batch's backward and the next forward, and the exposed
data-parallel time the GPU waits on around them (the card aggregates and updates layer by layer
meanwhile, so the step's tail is max(DP tail, pipeline - compute), not their sum): the window
W_o; only what exceeds the window is exposed (optimusnic.exposed_time).
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.offload import W_o
from optimus_calc.equations.registry import equation, sym
from optimus_calc.equations.step import T_dpx, W_b, W_f, Z, m

P_o = sym("P_o", "optimizer parameters of one GPU (its ZeRO shard of the stage)")
n_gc = sym("n_gc", "GPUs one card serves (GPUs per node / cards per node)", positive=True)
S_sp = sym("S_sp", "optimizer-state bytes of one card spilled to host RAM (memory.spill_bytes)")
B_gl = sym("B_gl", "achievable GPU-host link bandwidth per direction, bytes/s", positive=True)
B_cl = sym("B_cl", "achievable bandwidth of the card's host link per direction, bytes/s",
           positive=True)
b_gr = sym("b_gr", "bytes per gradient sent to the card (2: fp16/bf16)")
b_wt = sym("b_wt", "bytes per updated weight sent back to the GPU (2: fp16/bf16)")
T_in = sym("T_in", "gradient-in stage of the step's layers on the card, s")
T_up = sym("T_up", "update stage: the card's optimizer step over its GPUs' shards, s "
                   "(compute.optimizer_step_time)")
T_out = sym("T_out", "weights-out stage of the step's layers, s")
n_L = sym("n_L", "layers of the pipeline stage (the pipeline's items)", positive=True)
T_pipe = sym("T_pipe", "time the card's pipeline needs for the step's layers, s")

_SEED = ("seeds/optimusnic.md section 5 (\"each model layer's gradients are sent for aggregation "
         "once its backward pass is complete, the optimizer step can be executed on OptimusNIC "
         "immediately after aggregation\")")

gradient_in_time = equation(
    "optimusnic.gradient_in_time",
    sp.Max(P_o * b_gr / B_gl, (n_gc * P_o * b_gr + S_sp) / B_cl), "s",
    _SEED + "; section 4.1 (the state that does not fit on the card lives in host memory, "
    "prefetched over the card's link)",
    "Gradient-in stage: each GPU sends its shard's gradients over its own link; the card "
    "receives the shards of the GPUs it serves, and the spilled state, over its host link; "
    "the slower link sets the pace.")

weights_out_time = equation(
    "optimusnic.weights_out_time",
    sp.Max(P_o * b_wt / B_gl, (n_gc * P_o * b_wt + S_sp) / B_cl), "s",
    _SEED + "; PCIe links are full duplex, so weights out does not share a direction with "
    "gradients in",
    "Weights-out stage: updated 16-bit weights back to each GPU, the spilled state written back "
    "to host RAM over the card's host link.")

_slowest = sp.Max(T_in, T_up, T_out)

pipeline_time = equation(
    "optimusnic.pipeline_time",
    _slowest + (T_in + T_up + T_out - _slowest) / n_L, "s",
    _SEED + "; pipeline time of n items through stages s_i: (n - 1) max s_i + sum s_i "
    "(Hennessy and Patterson, Computer Architecture, appendix C), here with per-layer stage "
    "times s_i = T_i / n_L",
    "The card's pipeline over the step's layers: the slowest stage's whole time plus one "
    "layer's fill and drain through the other two stages.")

overlap_window = equation(
    "optimusnic.overlap_window",
    W_b + W_f + sp.Piecewise((T_dpx / m, Z >= 2), (T_dpx, True)), "s",
    _SEED + "; step.dp_exposed_time: ZeRO-2/3 expose data-parallel traffic in every micro-batch "
    "(m times one micro-batch's share), ZeRO-0/1 once per step, after the last backward and "
    "before the next forward",
    "OptimusNIC's window W_o: the last micro-batch's backward and the next forward, and the "
    "data-parallel time the GPU waits on around them (the last micro-batch's share of the "
    "exposed DP time; all of it with ZeRO-0/1). The card aggregates and updates layer by layer "
    "meanwhile, so the step's tail is max(DP tail, pipeline - compute), not their sum.")

exposed_time = equation(
    "optimusnic.exposed_time", sp.Max(0, T_pipe - W_o), "s",
    _SEED + "; \"the optimizer step time is always shorter than the combined duration of the "
    "forward and backward passes. This indicates that overlapping these operations is "
    "feasible\" (Table 3)",
    "OptimusNIC: what the card's pipeline needs beyond the window (the last micro-batch's "
    "backward and the next forward, and the exposed data-parallel time, during which the card "
    "keeps working) is exposed in the step.")
