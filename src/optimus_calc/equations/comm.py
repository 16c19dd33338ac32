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
r_q = sym("r", "compression ratio: compressed size / original size (0 < r <= 1)")
theta_c = sym("theta_c", "compression throughput of a node's compressors together, bytes/s",
              positive=True)
theta_d = sym("theta_d", "decompression throughput of a node's compressors together, bytes/s",
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

B_g = sym("B_g", "inter-node bandwidth of one GPU: its own NIC (rail-optimised; the node's "
          "NICs / its GPUs), bytes/s", positive=True)

A2A_SRC = (
    "nccl-tests src/alltoall.cu @ a0b82b2 L328-331 (one ncclSend + ncclRecv per peer in a "
    "group) and L48-53 (bus factor (n-1)/n); NCCL src/graph/paths.cc @ 5067397 L812-840 (PXN: a "
    "GPU may reach a NIC through an NVLink peer's PCIe switch, GPU->NIC direction only; it "
    "relays, it adds no NIC); DeepSeek-V3 arXiv 2412.19437 section 3.2.2 (tokens limited to 4 "
    "nodes because the IB all-to-all binds)")

x_a = sym("x", "share of a rank's buffer that crosses the network "
          "(comm.pairwise_cross_share or comm.dedup_cross_share)", positive=True)

all_to_all_time = equation(
    "comm.all_to_all_time",
    (n - 1) * alpha + (m - 1) / n * beta_i * z + x_a * z / B_g, "s", A2A_SRC,
    "All-to-all of a z-byte buffer over n ranks, m of them on each node: each rank sends to "
    "each of its n-1 peers (one latency alpha per peer); (m-1)/n of the buffer goes to peers on "
    "its node over the scale-up link (beta_i), the share x to other nodes through one NIC's "
    "worth of bandwidth (B_g), however PXN routes it, since every GPU of the node sends the "
    "same share at once. The two shares are summed, not overlapped (conservative: across "
    "nodes the NIC share dominates at a tenth of the bandwidth). One node (m = n, x = 0) "
    "gives the intra-node (n-1) alpha + (n-1)/n beta_i z.")

pairwise_cross_share = equation(
    "comm.pairwise_cross_share", (n - m) / n, "1", A2A_SRC,
    "NCCL's pairwise all-to-all (and --moe-dispatcher alltoall): z/n to each peer, so the "
    "(n - m)/n of the buffer bound for the other nodes' ranks crosses the network.")

k_d = sym("k", "experts each token is routed to (top-k)", positive=True)

c_o = sp.Max(N - 1, 1)  # the group's other nodes (one node: none, its term 0)

_dedup = c_o / k_d * (1 - (1 - (n - m) / (c_o * n)) ** k_d)
dedup_cross_share = equation(
    "comm.dedup_cross_share", _dedup, "1",
    "DeepSeek-V3 arXiv 2412.19437 section 3.2.2 (a token crosses IB once to each node hosting "
    "its experts, then NVLink forwards it); Megatron-LM megatron/core/transformer/moe/README.md "
    "L310-311 @ d98e8a6 (the flex dispatcher's DeepEP backend 'removes redundant tokens during "
    "cross-node communication'; HybridEP, DeepEP's hierarchical RDMA + NVLink branch, assumed "
    "alike); balanced routing, experts drawn independently (assumed)",
    "MoE dispatch or combine through DeepEP or HybridEP (--moe-dispatcher): of the buffer's k "
    "copies of each token (z / k bytes a copy), one crosses to each other node among the "
    "token's experts. The rank with m of the group's n ranks on its node sees the other n - m "
    "on the group's N - 1 other nodes, (n - m) / ((N - 1) n) of the experts on each: "
    "(N - 1)(1 - (1 - (n - m) / ((N - 1) n))^k) copies cross, the expected number of other "
    "nodes that k experts fall on, against k (n - m) / n for the pairwise all-to-all. A group "
    "that tiles its nodes (N = n / m) gives (n / m - 1)(1 - (1 - m / n)^k); one that straddles "
    "two (EP 32 on 72-GPU racks: 8 ranks on one, 24 on the other, "
    "topology.placement) crosses at most once. The NVLink forwarding on the receiving node is "
    "hidden under the NIC time (one fused kernel, README L310). One node (m = n) crosses "
    "nothing.")

M_r = sym("M_r", "nodes a token's experts span at most (comm.routing_node_limit: "
          "Assumptions.moe_max_nodes and the model's group-limited routing)", positive=True)
_M = sp.Min(M_r, N)  # a limit at or above the group's nodes does not bind

node_limited_cross_share = equation(
    "comm.node_limited_cross_share",
    sp.Min(_M * (n - m) / n * (1 - (1 - 1 / _M) ** k_d) / k_d, _dedup), "1",
    "DeepSeek-V3 arXiv 2412.19437 section 2.1.2 (node-limited routing: each token is sent to "
    "at most M nodes, M = 4) and section 3.2.2 (once to each node, then NVLink); NeMo "
    "AutoModel's FakeBalancedGate (nemo_automodel/components/moe/layers.py L509-548 @ "
    "89e3a9fdd: token t's k experts are tk ... tk + k - 1 mod the expert count, a block that "
    "never straddles a node when a node's experts are a multiple of k: M = 1); balanced "
    "routing (assumed)",
    "comm.dedup_cross_share where routing limits a token to M of the group's N nodes: the "
    "token's min(M, N) nodes are drawn evenly from the group's, so min(M, N) (n - m) / n of "
    "them are other nodes, and its k experts fall evenly among them, reaching each with "
    "probability 1 - (1 - 1/min(M, N))^k; a copy (z / k bytes) crosses to each other node "
    "reached. M >= N gives comm.dedup_cross_share for a group that tiles its nodes; M = 1 "
    "sends each token across at most once: (n - m) / (n k) of the buffer. Never above the "
    "unlimited share: a group that straddles two racks (topology.placement) holds unequal "
    "shares of the experts on its nodes, which the even draw does not see (EP 32 on NVL72 "
    "racks: at M = 1 0.75 / k, below the unlimited 0.125; the even form at M = 2, 0.187, is "
    "capped at it).")

G_r = sym("G_r", "expert groups of the model's group-limited routing (Model.router_groups; 1: "
          "none)", positive=True)
g_r = sym("g_r", "groups a token's experts are chosen from (Model.router_group_topk)",
          positive=True)
M_a = sym("M_a", "nodes a token's experts span at most by the run's routing "
          "(Assumptions.moe_max_nodes; 1e6: no limit)", positive=True)
T_n = sym("T_n", "1 where the EP groups' blocks of ranks tile the nodes and their stride "
          "nests in a node (topology.nests: each node holds as many of a group's ranks), 0 "
          "where some group straddles a node boundary or holds unequal shares", nonnegative=True)
_span = sp.ceiling(N / G_r)  # nodes one group's contiguous experts fill where groups nest in nodes
_nests = (sp.Eq(G_r / N, sp.ceiling(G_r / N)) | sp.Eq(N / G_r, _span)) & sp.Eq(T_n, 1)

routing_node_limit = equation(
    "comm.routing_node_limit",
    sp.Min(M_a, sp.Piecewise((g_r * _span, _nests), (g_r * (_span + 1), True))), "nodes",
    "DeepSeek-V3 arXiv 2412.19437 section 2.1.2 (node-limited routing) and its config.json "
    "(n_group 8, topk_group 4); Megatron-LM @ d98e8a6 moe_utils.py group_limited_topk L673-725 "
    "(the experts in num_groups equal contiguous groups, scores.view(tokens, groups, -1); a "
    "token's top-k from its best group_topk groups; router.py L779-785 passes them) and "
    "moe_layer.py L188-196 (local experts contiguous by EP rank); EP ranks contiguous on a node "
    "(topology.placement)",
    "Nodes a token's experts can span: at most M_a (the run's limit, --assume moe_max_nodes), and "
    "where the model routes group-limited, its g_r groups' nodes. The EP group's experts lie in "
    "order over its N nodes and each group is a contiguous block of them, so where the groups "
    "and nodes nest (N divides G_r, or G_r divides N) and the EP groups tile the nodes (T_n = 1) "
    "a group fills ceil(N / G_r) nodes; else it may straddle one more (EP 64 at stride 8 on "
    "72-GPU NVL72 racks: 8, not 4). DeepSeek-V3 (8 groups, 4 a token) over EP 64 on 8 DGX "
    "nodes: 4; over EP 128 on 16: 8; a model without groups (G_r = g_r = 1): N, no limit.")

tree_all_reduce_time = equation(
    "comm.tree_all_reduce_time", 2 * D * alpha + 2 * (n - 1) / n * beta * z, "s",
    "Sanders, Speck & Traeff 2009 (two-tree reduction/broadcast); NCCL 2.4 double binary trees",
    "Double-binary-tree all-reduce: reduce up and broadcast down, pipelined over two trees "
    "that each carry half the data, log2(n) depth; the bandwidth term is 2(n-1)/n beta z, "
    "which is exact for n = 1 and 2 and tends to the two-tree bound 2 beta z.")

c_b = sym("c_b", "pipeline chunk, bytes of the per-GPU buffer", positive=True)

NCCL_BUFF = ("NCCL src/init.cc DEFAULT_BUFFSIZE (1 << 22) = 4 MiB per channel connection "
             "(NCCL_BUFFSIZE, docs: Environment Variables), cut into NCCL_STEPS = 8 slots "
             "(src/include/device.h)")

_w_nvlink = 2 * (m - 1) / m * beta_i  # s/byte: RS + AG, both on the GPU's NVLink
_w_net = 2 * (N - 1) / N * beta_e     # s/byte: inter-node all-reduce of the shards, node's NICs
_w_max = sp.Max(_w_nvlink, _w_net)

hierarchical_all_reduce_pipelined_time = equation(
    "comm.hierarchical_all_reduce_pipelined_time",
    2 * (m - 1) * alpha_i + 2 * (N - 1) * alpha_e
    + _w_max * z + (_w_nvlink + _w_net - _w_max) * sp.Min(z, c_b), "s",
    "seeds/squeezenic.md section 3 (local reduce-scatter, global all-reduce, local all-gather); "
    "pipelined over chunks as NCCL moves data through its FIFO buffers: " + NCCL_BUFF,
    "Two-level all-reduce (intra-node reduce-scatter, inter-node ring all-reduce of each GPU's "
    "1/m shard on its rail, intra-node all-gather) pipelined over chunks of c_b bytes. "
    "Reduce-scatter and all-gather share the GPU's NVLink, so they are one resource "
    "(2 (m-1)/m beta_i per byte); the network is the other (2 (N-1)/N beta_e per byte). The "
    "steady state runs at the slower resource over the whole buffer; fill and drain add the "
    "other resource's work on one chunk, min(z, c_b); each phase's ring latency is paid once "
    "(chunks in flight overlap it, NCCL_STEPS = 8). c_b >= z gives the three phases summed "
    "(SqueezeNIC equation 1 with the local all-gather); N = 1 gives the intra-node ring "
    "all-reduce, m = 1 the inter-node ring all-reduce.")

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

_intra = lambda x: alpha_i + beta_i * x  # noqa: E731  T_comm^intra(x): one intra-node ring step
_inter = lambda x: alpha_e + beta_e * x  # noqa: E731  T_comm^inter(x): one inter-node ring step
SQZ = "Rebai et al. 2024, SqueezeNIC (seeds/squeezenic.md) section 3, equation"
SQZ_NOTE = (
    "Evaluated on the same per-GPU buffer z as the alpha-beta ring (Patarasuk & Yuan): g = z/m "
    "is the partition each GPU holds after the local reduce-scatter, each of the m-1 intra-node "
    "steps moves g, each of the 2(N-1) inter-node steps moves g/N per rail (z/N per node over "
    "the node's NICs, beta_e), and the N hardware (de)compressions each handle one step's chunk. "
    "Differences from the paper as written: (a) the paper charges the whole partition g at every "
    "inter-node step and to every one of the N (de)compressions (factor N too large); (b) it "
    "omits the local all-gather that gives every GPU the reduced gradient (section 2.2 has "
    "SqueezeNIC broadcast it to the local GPUs), added here as (m-1) T_intra(g) so that all "
    "three are all-reduces comparable with the ring; (c) the phases are summed, not pipelined.")

_g = z / m            # partition per GPU after the local reduce-scatter
_local = (m - 1) * _intra(_g)   # local reduce-scatter, and the local all-gather
_hw = N * (z / N) / theta_c + N * r_q * (z / N) / theta_d   # N chunks of z/N per node

squeezenic_baseline_time = equation(
    "comm.squeezenic_baseline_time", _local + 2 * (N - 1) * _inter(z / N) + _local, "s",
    f"{SQZ} (1)",
    "Baseline (no compression): local reduce-scatter, inter-node ring all-reduce of the shards, "
    "local all-gather; equal to the hierarchical all-reduce with its phases summed. " + SQZ_NOTE)

squeezenic_app1_time = equation(
    "comm.squeezenic_app1_time",
    _local + 2 * (N - 1) * _inter(r_q * z / N) + _hw + _local, "s", f"{SQZ} (2)",
    "Approach 1 (local reduce-scatter, then in-NIC compression): the inter-node all-reduce moves "
    "r z; the node's compressors (aggregate throughput theta_c, theta_d) compress z and "
    "decompress r z. " + SQZ_NOTE)

squeezenic_app2_time = equation(
    "comm.squeezenic_app2_time",
    (m - 1) * _intra(r_q * _g) + (m - 1) * _g / theta_gc + (m - 1) * r_q * _g / theta_gd
    + _hw + 2 * (N - 1) * _inter(r_q * z / N) + _local, "s", f"{SQZ} (3)",
    "Approach 2 (compress on the GPU, local reduce-scatter of compressed chunks, in-NIC "
    "compression): each of the m-1 local steps compresses g on the GPU (theta_gc) and "
    "decompresses r g (theta_gd). " + SQZ_NOTE)

# --- NCCL's own latency model (src/graph/tuning.cc @ 5067397c, ncclTopoTuneModel) -----------
NCCL_TUNING = "NCCL src/graph/tuning.cc @ 5067397c"
a_0 = sym("a_0", "NCCL base latency of the algorithm and protocol, s (tuning.cc L149-155)")
S_n = sym("S", "steps of the collective in NCCL's model: 2(n-1) all-reduce, n-1 reduce-scatter "
          "and all-gather, n broadcast and reduce (tuning.cc L288-290)")
S_e = sym("S_e", "of those, steps across nodes: 2(N-1) all-reduce, N-1 the others, 0 on one "
          "node (tuning.cc L410)")
l_i = sym("l_i", "NCCL per-step hardware latency inside the node (NVLink or PCI table, "
          "tuning.cc L157-169), raised to the network post overhead across nodes, s")
l_e = sym("l_e", "NCCL per-step network latency (NET table, tuning.cc L170-175), s")
D_N = sym("D_N", "floor(log2 N): NCCL's log2i of the node count")
L_c = sym("L", "latency of one collective, s")
f_p = sym("f_p", "the protocol's share of the Simple protocol's bandwidth (ring: LL 0.5, LL128 "
          "0.92; tree: LL 1/3.8; tuning.cc L327-335)", positive=True)

nccl_ring_latency = equation(
    "comm.nccl_ring_latency", a_0 + (S_n - S_e) * l_i + S_e * l_e, "s",
    NCCL_TUNING + " L384, L402-412 (ring: base + intra-node steps x intraLat + inter-node "
    "steps x interLat; intraLat raised to the network overhead across nodes)",
    "Latency NCCL's tuning model gives a ring collective for one protocol.")

nccl_tree_latency = equation(
    "comm.nccl_tree_latency", a_0 + 2 * ((m - 1) * l_i + D_N * l_e), "s",
    NCCL_TUNING + " L384, L414-416 (tree all-reduce: up and down the node's chain and the "
    "log2 N levels of the inter-node tree)",
    "Latency NCCL's tuning model gives a tree all-reduce for one protocol.")

nccl_collective_time = equation(
    "comm.nccl_collective_time", L_c + F * beta * z / f_p, "s",
    NCCL_TUNING + " L630-653 (ncclTopoGetAlgoTime: time = latency + bytes / bandwidth); "
    "F beta z is the Simple protocol's bus-bandwidth time (nccl-tests doc/PERFORMANCE.md)",
    "Time of one collective with one algorithm and protocol; NCCL runs the protocol with the "
    "least such time.")

L_s = sym("L_s", "the per-step latencies of a ring collective, (S - S_e) l_i + S_e l_e, s")

nccl_pipelined_time = equation(
    "comm.nccl_pipelined_time", a_0 + sp.Max(L_s, F * beta * z / f_p), "s",
    "NCCL src/include/device.h L26 (NCCL_STEPS 8 buffer slots per connection), "
    "src/include/collectives.h L19-20 (all-reduce slice 2 steps, chunk 4 steps), "
    "src/enqueue.cc L2222-2225 (Simple ring chunk = buffer / NCCL_STEPS x chunk steps); "
    "latency and transfer overlapped as in LogGP's gap/latency overlap (Alexandrov et al. 1995)",
    "Ring collective with the Simple protocol: a sender keeps up to NCCL_STEPS / slice steps = 4 "
    "slices in flight per connection, so a step's latency (the peer's credit and the proxy's "
    "post) is waited for only while less data is in flight than it covers: the base latency "
    "plus the larger of the steps' latencies and the bandwidth time. NCCL's own model "
    "(comm.nccl_collective_time) adds them, a selection heuristic; nccl-tests issue #119 "
    "(133 MB on 24 A100) would need 25.9 GB/s per 200 Gb/s NIC, above line rate, if they "
    "added (docs/communication.md).")
