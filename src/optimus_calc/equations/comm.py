"""Communication: the alpha-beta model, collectives, hierarchy, in-NIC compression, multicast.

T(z) = alpha + beta * z (Hockney; SqueezeNIC section 3), beta = 1 / (bandwidth x efficiency).
Message sizes z are the whole buffer in bytes, as nccl-tests counts them (doc/PERFORMANCE.md):
all-gather's output, reduce-scatter's input.
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

z = sym("z", "message size, bytes (the whole buffer)")
n = sym("n", "ranks in the collective", positive=True)
alpha = sym("alpha", "latency per step, s")
beta = sym("beta", "inverse bandwidth, s/byte (1 / (bandwidth x efficiency))")
m = sym("m", "GPUs per node in the collective", positive=True)
N = sym("N", "nodes in the collective", positive=True)
alpha_i = sym("alpha_i", "intra-node latency per step, s")
alpha_e = sym("alpha_e", "inter-node latency per step, s")
beta_i = sym("beta_i", "intra-node inverse bandwidth, s/byte")
beta_e = sym("beta_e", "inter-node inverse bandwidth of the node (all its NICs), s/byte")
B_line = sym("B_line", "NIC line rate, bytes/s (converted from Gb/s in units.py)")
B_pcie = sym("B_pcie", "host PCIe bandwidth on the NIC's path, bytes/s")
eta_n = sym("eta_n", "achievable fraction of the NIC line rate")
eta_p = sym("eta_p", "achievable fraction of PCIe bandwidth")
K = sym("K", "NICs per node", positive=True)
B_nic = sym("B_nic", "effective bandwidth of one NIC, bytes/s")
B_intra = sym("B_intra", "effective intra-node bandwidth per GPU, bytes/s")
T = sym("T", "collective time, s", positive=True)
F = sym("F", "nccl-tests bus-bandwidth factor: 2(n-1)/n all-reduce, (n-1)/n RS/AG/A2A, 1 bcast")
g = sym("g", "gradient partition size, bytes")
r_q = sym("r", "compression ratio: compressed size / original size (0 < r <= 1)")
theta_c = sym("theta_c", "compression throughput of the hardware compressor, bytes/s",
              positive=True)
theta_d = sym("theta_d", "decompression throughput of the hardware compressor, bytes/s",
              positive=True)
theta_gc = sym("theta_gc", "GPU compression throughput, bytes/s", positive=True)
D = sym("D", "tree depth, ceil(log2 n), computed exactly on integers")
theta_gd = sym("theta_gd", "GPU decompression throughput, bytes/s", positive=True)

NCCL_TESTS = "nccl-tests doc/PERFORMANCE.md; Patarasuk & Yuan 2009 (bandwidth-optimal ring)"

p2p_time = equation(
    "comm.p2p_time", alpha + beta * z, "s",
    "Hockney alpha-beta model as used in seeds/squeezenic.md section 3: T(z) = alpha + beta z",
    "Point-to-point transfer of z bytes over one link.")

nic_bandwidth = equation(
    "comm.nic_bandwidth", sp.Min(B_line * eta_n, B_pcie * eta_p), "bytes/s",
    "hardware-specs.md section 4 (CX-6 200G needs Gen4 x16); the host PCIe path caps the NIC",
    "Effective bandwidth of one NIC per direction: line rate, capped by the PCIe path to the GPU.")

node_network_bandwidth = equation(
    "comm.node_network_bandwidth", K * B_nic, "bytes/s",
    "rail-optimised nodes (one NIC per GPU): DGX A100/H100 (hardware-specs.md section 6)",
    "Inter-node bandwidth of a node: all its NICs.")

ring_bandwidth = equation(
    "comm.ring_bandwidth", sp.Min(B_intra, K * B_nic), "bytes/s",
    "NCCL rings: one ring per NIC, each crossing the network once per node, so a multi-node "
    "ring's bus bandwidth is min(NVLink, node NIC aggregate) (NCCL performance notes)",
    "Bottleneck bandwidth of a ring that spans several nodes.")

ring_alpha = equation(
    "comm.ring_alpha", (N * alpha_e + (n - N) * alpha_i) / n, "s",
    "a ring over N nodes of n/N GPUs has N inter-node hops and n - N intra-node hops",
    "Average latency per ring step across nodes.")

ring_all_reduce_time = equation(
    "comm.ring_all_reduce_time", 2 * (n - 1) * alpha + 2 * (n - 1) / n * beta * z, "s",
    NCCL_TESTS + "; calibration.md section 6", "Ring all-reduce: reduce-scatter then all-gather.")

ring_reduce_scatter_time = equation(
    "comm.ring_reduce_scatter_time", (n - 1) * alpha + (n - 1) / n * beta * z, "s",
    NCCL_TESTS, "Ring reduce-scatter of a z-byte buffer.")

ring_all_gather_time = equation(
    "comm.ring_all_gather_time", (n - 1) * alpha + (n - 1) / n * beta * z, "s",
    NCCL_TESTS, "Ring all-gather into a z-byte buffer.")

ring_broadcast_time = equation(
    "comm.ring_broadcast_time", (n - 1) * alpha + sp.Min(1, n - 1) * beta * z, "s",
    NCCL_TESTS + " (pipelined ring: bus bandwidth factor 1)", "Pipelined ring broadcast.")

ring_reduce_time = equation(
    "comm.ring_reduce_time", (n - 1) * alpha + sp.Min(1, n - 1) * beta * z, "s",
    NCCL_TESTS + " (pipelined ring: bus bandwidth factor 1)", "Pipelined ring reduce.")

all_to_all_time = equation(
    "comm.all_to_all_time", (n - 1) * alpha + (n - 1) / n * beta * z, "s",
    NCCL_TESTS + " (each rank sends (n-1)/n of its buffer)", "Pairwise all-to-all.")

tree_all_reduce_time = equation(
    "comm.tree_all_reduce_time", 2 * D * alpha + 2 * (n - 1) / n * beta * z, "s",
    "Sanders, Speck & Traeff 2009 (two-tree reduction/broadcast); NCCL 2.4 double binary trees",
    "Double-binary-tree all-reduce: reduce up and broadcast down, pipelined over two trees "
    "that each carry half the data, log2(n) depth; the bandwidth term is 2(n-1)/n beta z, "
    "which is exact for n = 1 and 2 and tends to the two-tree bound 2 beta z.")

hierarchical_all_reduce_time = equation(
    "comm.hierarchical_all_reduce_time",
    2 * (m - 1) * alpha_i + 2 * (m - 1) / m * beta_i * z
    + 2 * (N - 1) * alpha_e + 2 * (N - 1) / N * beta_e * z, "s",
    "seeds/squeezenic.md section 3 (local reduce-scatter, global all-reduce, local all-gather); "
    "each GPU's 1/m shard crosses the network on its own rail, so the node's NICs share z",
    "Two-level all-reduce: intra-node reduce-scatter, inter-node ring all-reduce of the shards "
    "over the node's NICs, intra-node all-gather.")

multicast_all_gather_time = equation(
    "comm.multicast_all_gather_time", 2 * sp.Min(1, n - 1) * alpha + (n - 1) / n * beta * z,
    "s",
    "seeds/multicast-allgather-abstract.md (Khalilov et al., SC'24): constant-time reliable "
    "broadcast over hardware multicast; receive-bound",
    "All-gather where each rank multicasts its z/n shard once; every rank still receives "
    "(n-1)/n z.")

ring_all_gather_injected_bytes = equation(
    "comm.ring_all_gather_injected_bytes", (n - 1) / n * z, "bytes",
    NCCL_TESTS, "Bytes each rank injects into the network in a ring all-gather.")

multicast_all_gather_injected_bytes = equation(
    "comm.multicast_all_gather_injected_bytes", z / n, "bytes",
    "seeds/multicast-allgather-abstract.md: 2x traffic reduction (send z/n once, the switch "
    "replicates)", "Bytes each rank injects with multicast all-gather.")

bus_bandwidth = equation(
    "comm.bus_bandwidth", z / T * F, "bytes/s", NCCL_TESTS,
    "nccl-tests bus bandwidth: algorithm bandwidth z/T times the collective's factor F.")

_intra = lambda x: alpha_i + beta_i * x  # noqa: E731  T_comm^intra
_inter = lambda x: alpha_e + beta_e * x  # noqa: E731  T_comm^inter
SQZ = "Rebai et al. 2024, SqueezeNIC (seeds/squeezenic.md) section 3, equation"

squeezenic_baseline_time = equation(
    "comm.squeezenic_baseline_time", (m - 1) * _intra(g)
    + 2 * (N - 1) * _inter(g), "s", f"{SQZ} (1)",
    "Baseline gradient synchronisation of partition g: (M-1) T_intra(g) + 2(N-1) T_inter(g), "
    "exactly as written in the seed (M = GPUs per node, N = nodes).")

squeezenic_app1_time = equation(
    "comm.squeezenic_app1_time",
    (m - 1) * _intra(g) + 2 * (N - 1) * _inter(r_q * g) + N * g / theta_c
    + N * r_q * g / theta_d, "s", f"{SQZ} (2)",
    "Approach 1 (local reduce-scatter + in-NIC compression): compressed inter-node all-reduce, "
    "N compressions and decompressions on the hardware compressor.")

squeezenic_app2_time = equation(
    "comm.squeezenic_app2_time",
    (m - 1) * _intra(r_q * g) + (m - 1) * g / theta_gc + (m - 1) * r_q * g / theta_gd
    + N * r_q * g / theta_d + N * g / theta_c + 2 * (N - 1) * _inter(r_q * g), "s",
    f"{SQZ} (3)",
    "Approach 2 (compress on the GPU, local reduction of compressed gradients, in-NIC "
    "compression): (M-1) GPU compressions and decompressions plus the hardware terms.")
