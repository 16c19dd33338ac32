"""The offloaded optimizer step as DeepSpeed executes it, parameter-offload traffic, NVMe swaps of
the optimizer state and ZeRO-3 gather overheads. Every time is per GPU rank; all ranks of a step
run these phases at once, sharing the node's host memory, PCIe links and drives.

Sources, read from DeepSpeed v0.15.0 (commit 55b4cae80fc1479ac802b91b4b8955da444016ae), the
release of the runs in seeds/optimusnic.md section 5:

- deepspeed/runtime/zero/stage3.py L2049-2095 ``step``: overflow check, global norm, then per
  sub-group ``unscale_and_clip_grads`` (L2141-2150, one in-place ``mul_`` over the fp32
  gradients), ``_optimizer_step`` (L965-979, the CPU optimizer) and
  ``_reassign_or_swap_out_partitioned_parameters`` (L2032-2035: ``copy_`` of the fp32 partition
  into the 16-bit GPU partition).
- stage3.py L2171-2181 ``has_overflow``: ``torch.isinf(buf).any()`` and ``torch.isnan(buf).any()``
  over the host gradient buffer (L530-534: on the CPU with offload, in the gradient-accumulation
  dtype, which engine.py L931-945 sets to the model dtype: fp16). In ATen (TensorCompare.cpp)
  ``isinf`` is ``self.abs() == inf`` and ``isnan`` is ``self != self``: the profile's abs, eq,
  ne and two any, i.e. five passes.
- stage3.py L1451-1500 ``partition_grads``: the 16-bit gradient partition is copied to the host
  buffer and into the fp32 ``.grad`` of the host partition (a blocking cross-device ``copy_``
  with a dtype change: PyTorch converts on the CPU, aten/src/ATen/native/cuda/Copy.cu).
- offload_config.py L72: ``pin_memory`` defaults to False, so device copies go through pageable
  memory (the CUDA driver stages them: one more host copy each way).
- deepspeed/ops/adam/cpu_adam.py L163 and csrc/includes/cpu_adam.h L140-200: CPUAdam is one fused
  OpenMP loop that reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq
  (28 bytes per parameter in fp32), AVX-512 or AVX2 (csrc/includes/simd.h: x86 only; other ISAs
  take the scalar loop).
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

# ---- symbols -----------------------------------------------------------------------------------
P_r = sym("P_r", "parameters whose optimizer state this rank updates (its ZeRO partition)")
k_n = sym("k_n", "GPU ranks per node sharing the host memory, links and drives", positive=True)
S_n = sym("S_n", "CPU sockets per node", positive=True)
B_sock = sym("B_sock", "peak memory bandwidth of one CPU socket, bytes/s", positive=True)
eta_s = sym("eta_s", "achievable fraction of peak memory bandwidth (STREAM triad)",
            positive=True)
eta_c = sym("eta_c", "fraction of STREAM a framework's CPU pass reaches (calibrated)",
            positive=True)
n_t = sym("n_th", "CPU threads of one rank", positive=True)
B_core = sym("B_thr", "memory bandwidth one thread can draw, bytes/s", positive=True)
f_c = sym("f_c", "CPU clock, Hz", positive=True)
c_m = sym("c_m", "elements per core-cycle of ATen's comparison/abs/any CPU kernels",
          positive=True)
F_cyc = sym("F_cyc", "FP32 FLOPs per cycle per core at full SIMD width", positive=True)
u_v = sym("u_v", "fraction of the SIMD width the implementation uses (1 SIMD, 1/lanes scalar)",
          positive=True)
B_r = sym("B_r", "host memory bandwidth of one rank's CPU passes, bytes/s", positive=True)
R_m = sym("R_m", "element rate of one rank's comparison passes, elements/s", positive=True)
B_l = sym("B_l", "peak GPU-host link bandwidth per direction, bytes/s", positive=True)
eta_l = sym("eta_l", "achievable fraction of the GPU-host link", positive=True)
b_g16 = sym("b_gd", "bytes per gradient sent from the GPU (2: fp16/bf16; 4 if cast on the GPU)")
n_x = sym("n_x", "crossings of the 16-bit gradient before the fp32 copy (DeepSpeed: D2H, H2D = 2)")
b_gx = sym("b_gx", "bytes per gradient of the final copy into the host fp32 gradient (2 or 4)")
b_acc = sym("b_acc", "bytes per element of the host gradient buffer the overflow check reads")
b_p16 = sym("b_pd", "bytes per parameter sent back to the GPU (2: fp16/bf16)")
s_p = sym("s_p", "1 if device copies go through pageable host memory (pin_memory false), else 0")
c_v = sym("c_v", "1 if the 16/32-bit conversion runs on the CPU, 0 if on the GPU (SuperOffload)")
c_w = sym("c_w", "1 if the parameters' 32-to-16-bit conversion runs on the CPU, else 0")
n_m = sym("n_m", "comparison passes of the overflow check (abs, eq, ne, any, any: 5)")
o_s = sym("o_s", "1 if DeepSpeed scans the host gradient buffer for inf/NaN (ZeRO-3 with fp16), "
          "else 0 (bf16; ZeRO-1/2 track overflow on the GPU)")
beta_a = sym("beta_a", "bytes the optimizer implementation moves per parameter")
phi_a = sym("phi_a", "FLOPs per parameter of the optimizer update (Adam 12)")
T_d2h = sym("T_d2h", "gradient device-to-host copy, s")
T_gc = sym("T_gc", "host copies of the gradient (staging, fp32 conversion), s")
T_ov = sym("T_ov", "overflow check, s")
T_un = sym("T_un", "unscale and clip, s")
T_ad = sym("T_ad", "optimizer kernel, s")
T_pc = sym("T_pc", "host copies of the parameters (16-bit conversion, staging), s")
T_h2d = sym("T_h2d", "parameter host-to-device copy, s")
T_s = sym("T_s", "the offloaded optimizer step of one rank, s")
W_b = sym("W_b", "backward time of the step's last micro-batch, s")
Z_b = sym("Z_b", "parameters in the last gradient bucket (reduce_bucket_size), elements")
W_o = sym("W_o", "overlap window of OptimusNIC: last micro-batch's backward + next first forward "
                "+ its exposed data-parallel time (optimusnic.overlap_window), s")
# NVMe
n_d = sym("n_d", "NVMe drives of the node in RAID0", positive=True)
R_rd = sym("R_rd", "sequential read bandwidth of one drive, bytes/s", positive=True)
R_wr = sym("R_wr", "sequential write bandwidth of one drive, bytes/s", positive=True)
eta_n = sym("eta_d", "fraction of the drives' bandwidth the async I/O reaches", positive=True)
b_os = sym("b_os", "optimizer-state bytes per parameter swapped (fp32 master + moments: 12)")
b_gs = sym("b_gs", "gradient bytes per parameter swapped through NVMe (fp32: 4)")
pi_n = sym("pi_n", "1 if DeepSpeed pipelines the swaps with the step (pipeline_read/write)")
T_rd = sym("T_rd", "NVMe reads of the step, s")
T_wr = sym("T_wr", "NVMe writes of the step, s")
T_cpu = sym("T_cpu", "CPU and PCIe phases of the step, s")
# parameter offload and ZeRO-3 gathers
P_p = sym("P_p", "parameters of the rank's model replica (pipeline stage, after TP)")
N_d = sym("N_d", "data-parallel degree (ZeRO partitions over it)", positive=True)
b_w = sym("b_w", "bytes per weight (2 for bf16/fp16)")
m_b = sym("m_b", "micro-batches per step (gradient accumulation steps)", positive=True)
r_f = sym("r_f", "1 when full recomputation fetches again (Assumptions.zero3_recompute_regathers)")
Q_p = sym("Q_p", "parameter bytes one rank fetches in one step, bytes")
T_q = sym("T_q", "time to stream one micro-batch's parameters, s")
W_c = sym("W_c", "compute time of one micro-batch (forward + backward), s")
n_mod = sym("n_mod", "modules ZeRO-3 gathers one after another in a pass", positive=True)
t_g = sym("t_g", "all-gather time of one module's parameters, s")
alpha_g = sym("alpha_g", "fixed cost of one module gather not hidden by prefetch, s")
d_p = sym("d_p", "prefetch depth in modules (0: no prefetch, 1: the next module)")
p_m = sym("p_m", "parameters of the largest gathered module, elements")
B_pf = sym("B_pf", "stage3_prefetch_bucket_size, elements")
M_live = sym("M_live", "stage3_max_live_parameters, elements")
c_pass = sym("c_pass", "gather passes per micro-batch (2; +1 for a recompute that gathers again)")

_DS = "DeepSpeed v0.15.0 deepspeed/runtime/zero/"

# ---- CPU rates of one rank ---------------------------------------------------------------------
cpu_rank_bandwidth = equation(
    "offload.cpu_rank_bandwidth",
    sp.Min(eta_c * eta_s * B_sock * S_n / k_n, n_t * B_core), "bytes/s",
    "roofline (Williams et al. 2009) on the host: the node's STREAM bandwidth shared by its GPU "
    "ranks (all ranks step at once), at the framework-pass efficiency calibrated on "
    "seeds/optimusnic.md Table 4 (mul_); limited by what the rank's threads can draw",
    "Host memory bandwidth one rank's bandwidth-bound CPU passes get.")

cpu_mask_rate = equation(
    "offload.cpu_mask_rate", c_m * f_c * n_t, "elements/s",
    "seeds/optimusnic.md Table 4: abs, eq and ne take the same time (15.3-15.4 ms) although they "
    "move 2-4 bytes per element: element-rate bound, not bandwidth bound",
    "Elements per second one rank's comparison passes (abs, eq, ne, any) process.")

# ---- the phases --------------------------------------------------------------------------------
grad_d2h_time = equation(
    "offload.grad_d2h_time", P_r * (n_x * b_g16 + b_gx) / (B_l * eta_l), "s",
    _DS + "stage3.py L1466-1470 partition_grads: copy_ of the 16-bit partition into the host "
    "buffer (D2H), .to(device) back (H2D), then L1497-1500 copy_ into the fp32 host gradient "
    "(D2H; 16-bit up to v0.15.0, cast to fp32 on the GPU from v0.16.4); link efficiency: "
    "seeds/deepspeed-bandwidth-characterization-methods.md (PCIe 76% of theoretical)",
    "Gradient crossings of the GPU-host link, serial on one stream.")

grad_host_copy_time = equation(
    "offload.grad_host_copy_time",
    P_r * (2 * s_p * (n_x * b_g16 + b_gx) + c_v * (b_g16 + 4)) / B_r, "s",
    _DS + "stage3.py L1497-1500 (fp32_grad_tensor.copy_ of the 16-bit gradient: blocking, "
    "converted on the CPU, PyTorch Copy.cu); offload_config.py L72 pin_memory=False (pageable: "
    "the driver stages every crossing through pinned buffers: read + write of its bytes)",
    "Host passes over the gradient: staging of each crossing (read + write) and the "
    "16-to-32-bit conversion (b_gd + 4); "
    "SuperOffload casts on the GPU and sends fp32 to pinned memory (c_v = s_p = 0).")

overflow_check_time = equation(
    "offload.overflow_check_time",
    o_s * sp.Max(n_m * P_r / R_m, P_r * (4 * b_acc + 4) / B_r), "s",
    _DS + "stage3.py L2171-2181 has_overflow: isinf(buf).any(), isnan(buf).any(); ATen "
    "TensorCompare.cpp: isinf = abs() == inf, isnan = self != self: abs (read+write b_acc), eq "
    "and ne (read b_acc, write 1), two any (read 1): 5 passes, 4 b_acc + 4 bytes. Only with "
    "fp16: DeepSpeed edaa722 stage3.py L2547-2551 (and v0.15.0 L1997-2000) call check_overflow() "
    "only if the dtype is float16; ZeRO-1/2 + CPU offload track overflow on the GPU "
    "(stage_1_and_2.py L1498-1504, has_overflow L2470-2484 uses local_overflow)",
    "Overflow check over the host gradient buffer: element-rate or bandwidth bound; none "
    "with bf16 and none under ZeRO-1/2 (o_s = 0).")

unscale_time = equation(
    "offload.unscale_time", P_r * 8 / B_r, "s",
    _DS + "stage3.py L2141-2150 unscale_and_clip_grads: one in-place mul_ over the fp32 "
    "gradients (read 4, write 4 bytes)",
    "Unscaling (and clipping, folded into the same factor) of the fp32 gradients.")

adam_time = equation(
    "offload.adam_time",
    sp.Max(P_r * beta_a / B_r, P_r * phi_a / (n_t * f_c * F_cyc * u_v)), "s",
    "DeepSpeed csrc/includes/cpu_adam.h L140-200 (fused CPUAdam: read p, g, m, v, write p, m, v "
    "= 28 B; AVX-512/AVX2, csrc/includes/simd.h; scalar elsewhere); GraceAdam: SVE on Grace "
    "(seeds/superoffload.md); torch.optim.Adam: one pass per op (72 B, evaluate/optimizer.py)",
    "Optimizer kernel: bytes over the rank's bandwidth, or FLOPs over its SIMD throughput.")

param_host_copy_time = equation(
    "offload.param_host_copy_time", P_r * (c_w * (4 + b_p16) + 2 * s_p * b_p16) / B_r, "s",
    _DS + "stage3.py L2032-2035: fp16_partitioned_groups_flat.copy_(fp32 partition): blocking, "
    "converted on the CPU (read 4, write b_pd), then staged from pageable memory (b_pd + b_pd)",
    "Host passes over the updated parameters before they go back to the GPU.")

param_h2d_time = equation(
    "offload.param_h2d_time", P_r * b_p16 / (B_l * eta_l), "s",
    _DS + "stage3.py L2032-2035 (the 16-bit partition lives on the GPU); link efficiency as "
    "offload.grad_d2h_time",
    "Updated 16-bit parameters copied back over the GPU-host link.")

offload_step_time = equation(
    "offload.step_time", T_d2h + T_gc + T_ov + T_un + T_ad + T_pc + T_h2d, "s",
    _DS + "stage3.py L2049-2095: the phases run one after another (blocking copies, one "
    "sub-group; sub_group_size 1e9 elements, config.py L165)",
    "The offloaded optimizer step of one rank, phase by phase.")

# ---- what overlaps with what -------------------------------------------------------------------
exposed_zero_offload = equation(
    "offload.exposed_zero_offload", T_s, "s",
    "seeds/optimusnic.md section 5 and Table 3 (the step follows the backward of all layers); "
    "seeds/superoffload.md Fig. 2 (the global overflow check and norm make the CPU wait for all "
    "gradients)",
    "ZeRO-Offload / ZeRO-Infinity: nothing of the step is hidden.")

T_g = sym("T_g", "gradient phases of the offloaded step run from the reduction hooks "
          "(fp32 device-to-host copy and its host staging), s")
P_g = sym("P_g", "gradients the rank's reduction buckets carry in a step (the GPU's parameters "
          "before ZeRO partitioning)")
T_post = sym("T_post", "phases that follow the backward in step(), s")
o_c = sym("o_c", "1 if the gradient copies run on a side stream during the boundary "
          "micro-batch's backward (DeepSpeed overlap_comm), else 0")
T_sp = sym("T_sp", "SuperOffload's speculative phases: gradient copies and CPU-Adam of the "
           "sub-groups as their gradients complete, s")
Z_s = sym("Z_s", "parameters per optimizer sub-group (sub_group_size), elements")
T_ov2 = sym("T_ov", "overflow check, s")

_S12 = ("DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py @ edaa722 (same code paths in "
        "v0.7.1 L1115-1130 and v0.15.0): ")
exposed_zero12_offload = equation(
    "offload.exposed_zero12_offload",
    (1 - o_c) * T_g + o_c * sp.Max(T_g - W_b, T_g * sp.Min(1, Z_b / P_g)) + T_post, "s",
    _S12 + "async_inplace_copy_grad_to_fp32_buffer_from_gpu L1590-1605 (cast to fp32 on the "
    "GPU, copy_ non_blocking into the fp32 CPU partition) is called from reduce_ipg_grads "
    "L1691-1757: ZeRO-2 from the gradient hooks during the boundary micro-batch's backward, "
    "ZeRO-1 from reduce_gradients() after the backward unless overlap_comm (L1758-1769, "
    "L861-882); on reduction_stream with overlap_comm, else on the compute stream (L1719-1727), "
    "so without it the copies serialise with the backward; the last bucket follows the backward",
    "ZeRO-1/2 + CPU offload: the gradient copies hide behind the boundary backward when "
    "they run from the hooks on a side stream, except the last bucket; the step after it "
    "(unscale, CPU-Adam, parameter copies) is exposed.")

n_hs = sym("n_hs", "blocking host syncs per parameter tensor of the rank's partition per "
           "step (Assumptions.offload_host_syncs_per_tensor)")
N_tp = sym("N_tp", "parameter tensors in the rank's optimizer partition: the stage's tensors "
           "x the partition's share of the stage's parameters")
t_hs = sym("t_hs", "GPU time lost per blocking host sync (Assumptions.host_sync_us), s")

host_sync_time = equation(
    "offload.host_sync_time", n_hs * N_tp * t_hs, "s",
    _S12 + "with the optimizer offloaded, at the accumulation boundary each parameter "
    "tensor of the partition is checked for overflow by `if self._has_inf_or_nan(grad.data)` "
    "(L1498-1500, a host read of a GPU tensor: a sync; its kernels L2486-2491) and its norm "
    "is read by `param_norm.item()` (L1622, complete_grad_norm_calculation_for_cpu_offload): "
    "2 syncs per tensor, serialised with the GPU work",
    "ZeRO-1/2 + CPU offload: the host syncs of the boundary's per-tensor overflow check and "
    "gradient norm, exposed (the GPU idles while the host relaunches after each sync).")

exposed_superoffload_stv = equation(
    "offload.exposed_superoffload_stv",
    sp.Max(T_sp - W_b, T_sp * sp.Min(1, Z_s / P_r)) + T_post + T_ov2, "s",
    "DeepSpeed deepspeed/runtime/superoffload/superoffload_stage3.py @ edaa722: partition_grads "
    "L134-184 hands each sub-group whose gradients are complete to the CPU-Adam worker process "
    "during the backward (only without gradient clipping); step() L192-230 waits for the last "
    "one, checks overflow (fp16 only), then per sub-group unscales the fp32 gradients on the CPU "
    "(mul_, unconditional, stage3.py L2696-2705) and copies the fp32 partition into the 16-bit "
    "GPU partition (L114-126; PyTorch Copy.cu converts on the CPU for CPU-to-GPU copies)",
    "SuperOffload with speculation-then-validation: the speculative CPU-Adam overlaps the "
    "backward except the last sub-group; unscale and parameter copies follow the backward.")

# ---- NVMe (ZeRO-Infinity offload_optimizer: nvme) ----------------------------------------------
nvme_read_time = equation(
    "offload.nvme_read_time", k_n * P_r * (b_os + b_gs) / (n_d * R_rd * eta_n), "s",
    _DS + "stage3.py L1902-1926 (_optimizer_states_and_gradient_swap_in: fp32 master, moments and "
    "the fp32 gradients swapped in per sub-group); the node's ranks share its RAID0",
    "NVMe reads of one step: optimizer state and gradients of all ranks of the node.")

nvme_write_time = equation(
    "offload.nvme_write_time", k_n * P_r * b_os / (n_d * R_wr * eta_n), "s",
    _DS + "stage3.py L1928-1934 and L1958 (_optimizer_states_and_gradient_swap_out after the "
    "update)",
    "NVMe writes of one step: the updated optimizer state of all ranks of the node.")

nvme_grad_write_time = equation(
    "offload.nvme_grad_write_time", k_n * P_r * b_gs / (n_d * R_wr * eta_n), "s",
    _DS + "stage3.py L1490-1511, swap at L1509 (swap_out_gradients at the accumulation "
    "boundary, in backward)",
    "NVMe writes of the fp32 gradients during the last backward.")

nvme_step_time = equation(
    "offload.nvme_step_time",
    (1 - pi_n) * (T_cpu + T_rd + T_wr) + pi_n * sp.Max(T_cpu, T_rd, T_wr), "s",
    "DeepSpeed offload_config.py L78-84 (pipeline_read, pipeline_write default False: swap, "
    "update and swap out run one after another)",
    "The NVMe-offloaded step: swaps and CPU phases serial, or pipelined over sub-groups.")

# ---- parameter offload (ZeRO-3 offload_param / ZeRO-Infinity) ----------------------------------
param_stream_bytes = equation(
    "offload.param_stream_bytes", (2 + r_f) * m_b * b_w * P_p / N_d, "bytes",
    "Rajbhandari et al. 2021 (ZeRO-Infinity) section 5: each rank brings its parameter partition "
    "to the GPU before every module's all-gather in the forward and again in the backward of "
    "every micro-batch (and in the recomputed forward)",
    "Parameter bytes one rank fetches from host memory or NVMe in one step.")

param_stream_time_cpu = equation(
    "offload.param_stream_time_cpu", Q_p / (B_l * eta_l), "s",
    "ZeRO-Infinity section 5 (offload_param: cpu): the partition crosses the rank's PCIe link",
    "Time to stream the step's parameters from host memory.")

param_stream_time_nvme = equation(
    "offload.param_stream_time_nvme",
    sp.Max(Q_p / (B_l * eta_l), k_n * Q_p / (n_d * R_rd * eta_n)), "s",
    "ZeRO-Infinity section 5 (offload_param: nvme): drives -> pinned host buffers -> GPU, "
    "pipelined (DeepSpeed buffer_count 5, offload_config.py L33); the node's ranks share the RAID0",
    "Time to stream the step's parameters from NVMe: the slower of drives and link.")

param_stream_exposed = equation(
    "offload.param_stream_exposed", m_b * sp.Max(0, T_q - W_c), "s",
    "DeepSpeed partitioned_param_coordinator.py L354-387 (prefetch while computing)",
    "Parameter streaming the micro-batches' compute does not hide.")

# ---- ZeRO-3 / FSDP gathers -----------------------------------------------------------------------
zero3_prefetch_depth = equation(
    "offload.zero3_prefetch_depth",
    sp.Piecewise((0, B_pf <= 0), (0, 2 * p_m > M_live), (1, True)), "modules",
    _DS + "partitioned_param_coordinator.py L354-359: prefetch only if stage3_prefetch_bucket_size "
    "> 0 and while the live parameters stay under stage3_max_live_parameters; the loop adds whole "
    "parameters until the bucket is full, so the next module is always started",
    "How many modules ahead ZeRO-3 gathers.")

t_cf = sym("t_cf", "forward compute of one module in a forward (or recomputed) pass, s")
t_cb = sym("t_cb", "backward compute of one module (its gradient GEMMs), s")
T_rb = sym("T_rb", "gradient reduce-scatters of one micro-batch that overlap the backward (all "
           "buckets but the last), s (0 when the reduction runs after the backward)")
o_dr = sym("o_dr", "1 if bucketed gradient reductions overlap the backward, 0 if the whole "
           "reduction runs after it (Megatron-LM without --overlap-grad-reduce)")
T_red = sym("T_red", "gradient reduction of the stage's gradients once (all buckets), s")
T_bkt = sym("T_bkt", "gradient reduction of one bucket, s")


def _pass_wait(x, w):
    """Wait of one pass over n_mod modules whose link time x each overlaps the compute w of
    the module before it (prefetch d_p = 1), or not at all (d_p = 0): the first module's link
    time, then what each later module's link time takes beyond the previous module's compute
    (DeepSpeed partitioned_param_coordinator.py L262-387, fetch_sub_module gathers the current
    module and prefetches the next; FSDP2's backward prefetch of one block, torch/distributed/
    fsdp/_fully_shard/_fsdp_param_group.py _backward_prefetch). Part of
    offload.zero3_exposed_gather_time, which explain shows with its values."""
    return (1 - d_p) * n_mod * x + d_p * (x + (n_mod - 1) * sp.Max(0, x - w))


zero3_overlapped_reduce_time = equation(
    "offload.zero3_overlapped_reduce_time", o_dr * (T_red - sp.Min(T_red, T_bkt)), "s",
    "DeepSpeed @ edaa722 deepspeed/runtime/zero/stage3.py L1570-1608: a bucket is reduce-"
    "scattered as it fills in the backward; the last follows it (step.dp_exposed_time)",
    "ZeRO-3 reduce-scatters of one micro-batch that cross the backward's link with the gathers: "
    "every bucket but the last (0 without overlap: all of it follows the backward).")

_r = T_rb / sp.Max(1, n_mod - 1)  # the reductions of one module before the last
# the backward's link in issue order (d_p = 1): the first gather; behind the first module's
# compute the second's gather, behind each later one the next gather and the previous module's
# reduction, behind the last the one before's; the last bucket follows (step.dp_exposed_time)
_bwd_wait = sp.Piecewise(
    (d_p * (t_g + sp.Max(0, t_g - t_cb) + (n_mod - 2) * sp.Max(0, t_g + _r - t_cb)
            + sp.Max(0, _r - t_cb)) + (1 - d_p) * (n_mod * t_g + T_rb), n_mod >= 2),
    (_pass_wait(t_g, t_cb) + T_rb, True))

zero3_exposed_gather_time = equation(
    "offload.zero3_exposed_gather_time",
    c_pass * n_mod * alpha_g + (c_pass - 1) * _pass_wait(t_g, t_cf) + _bwd_wait, "s",
    _DS + "partitioned_param_coordinator.py L262-387 (per-module fetch and prefetch); "
    "DeepSpeed @ edaa722 deepspeed/runtime/zero/stage3.py L335-336, L1570-1608 (gradients "
    "reduce-scattered per bucket during the backward on reduce_and_partition_stream, "
    "overlap_comm true for stage 3: runtime/zero/config.py L383-386), so the backward's "
    "all-gathers and reduce-scatters cross the same NICs; torchtitan FSDP2 likewise "
    "reduce-scatters each block in the backward (torchtitan/models/llama3/infra/parallelize.py "
    "L334-357 @ 73a0e69); Megatron-FSDP (Megatron-LM @ d98e8a6 core/distributed/fsdp/src/"
    "megatron_fsdp/param_and_grad_buffer.py L4440-4512, megatron_fsdp.py L757-790) gathers "
    "and reduce-scatters one TransformerLayer at a time, the next one always prefetched",
    "Gather time one micro-batch waits for: the per-module fixed cost of every pass, then per "
    "pass the link time each module's gather adds beyond the previous module's compute. The "
    "forward and a recomputed forward that gathers again carry the gathers (c_pass - 1 passes, "
    "windows of the forward's compute); in the backward (2x the forward's) the link carries "
    "the next module's gather and the previous module's reduce-scatter (T_rb / (n_mod - 1) "
    "each, every bucket but the last, which step.dp_exposed_time adds once) behind each "
    "module's compute: at hundreds of GPUs the ring latency (n - 1) alpha of every per-module "
    "collective grows with n while the compute per module does not, and the gathers stop "
    "hiding.")

# ---- SmartNIC transfers and the superchip tail ---------------------------------------------
G_n = sym("G_n", "GPUs per node", positive=True)
K_n = sym("K_n", "offload devices per node sharing the node's optimizer state", positive=True)
b_g16 = sym("b_g", "bytes per gradient element")
B_sn = sym("B_sn", "effective bandwidth of one SmartNIC's host link, bytes/s", positive=True)
B_le = sym("B_le", "effective GPU-host link bandwidth per direction, bytes/s", positive=True)
S_sp = sym("S", "optimizer-state bytes of one card that spill to host RAM")
T_k = sym("T_k", "the GPU's step of the optimizer fraction it keeps (SuperOffload), s")
T_xs = sym("T_x", "the exposed part of the offloaded step, s")

smartnic_transfer_time = equation(
    "offload.smartnic_transfer_time",
    sp.Max(P_r * (b_g16 + b_w) / B_le, P_r * G_n / K_n * (b_g16 + b_w) / B_sn) + 2 * S_sp / B_sn,
    "s",
    "seeds/optimusnic.md section 4: each GPU sends its shard's gradients and takes the weights "
    "back over its own link; each card receives the shards of the G_n/K_n GPUs it serves over "
    "its link (the slower side sets the time); a spill streams from host RAM and back",
    "SmartNIC offload: transfers of one step.")

superchip_step_time = equation(
    "offload.superchip_step_time", T_s + T_k, "s",
    "seeds/superoffload.md: GraceAdam updates the offloaded fraction; the GPU updates the "
    "fraction it keeps (f_k) after the backward",
    "SuperOffload: the whole optimizer step (Grace's phases and the GPU's tail).")

superchip_exposed_time = equation(
    "offload.superchip_exposed_time", T_xs + T_k, "s",
    "seeds/superoffload.md: the GPU's tail follows the backward, after the exposed Grace step",
    "SuperOffload: the optimizer time on the critical path.")
