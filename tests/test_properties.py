"""Invariants over random valid models, clusters and layouts (hypothesis)."""

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optimus_calc import catalog as catalog_mod
from optimus_calc.evaluate import comm as C
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Recompute, Training, ZeroStage

CAT = catalog_mod.load(())
NODES = ["dgx-a100", "dgx-h100", "xe8545", "dgx-2", "mi300x-node", "gh200-nvl2"]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def models(draw):
    heads = draw(st.sampled_from([4, 8, 16, 32, 64]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8, heads) if heads % k == 0]))
    head_dim = draw(st.sampled_from([64, 128]))
    moe = draw(st.booleans())
    experts = draw(st.sampled_from([4, 8, 16])) if moe else 0
    return Model(
        name="prop-model", source="hypothesis test", layers=draw(st.integers(1, 48)),
        hidden=heads * head_dim, heads=heads, kv_heads=kv,
        ffn_hidden=draw(st.integers(1, 8)) * heads * head_dim,
        ffn_type=draw(st.sampled_from(["gelu", "swiglu"])),
        vocab=draw(st.sampled_from([1000, 32000, 128256])),
        tied_embeddings=draw(st.booleans()), position_embedding="rope", norm="rmsnorm",
        experts=experts, top_k=min(2, experts), seq_len=2048)


@st.composite
def setups(draw):
    m = draw(models())
    node = CAT.get(draw(st.sampled_from(NODES)), "node")
    nodes = draw(st.sampled_from([1, 2, 4]))
    gpn = node.gpus
    tps = [t for t in (1, 2, 4, 8) if gpn % t == 0 and m.heads % t == 0
           and (m.n_kv % t == 0 or t % m.n_kv == 0)]
    tp = draw(st.sampled_from(tps))
    rest = gpn * nodes // tp
    pps = [p for p in (1, 2, 4) if rest % p == 0 and p <= m.layers]
    pp = draw(st.sampled_from(pps))
    dp = rest // pp
    mb = draw(st.sampled_from([1, 2]))
    gb = dp * mb * draw(st.sampled_from([1, 2, 4, 8]))
    gpu = CAT.get(node.gpu, "gpu")
    tr = Training(seq_len=draw(st.sampled_from([256, 2048, 8192])), micro_batch=mb,
                  precision="bf16" if gpu.peak_TFLOPS.bf16 else "fp16",
                  global_batch=gb, recompute=draw(st.sampled_from(list(Recompute))),
                  sequence_parallel=draw(st.booleans()), flash_attention=draw(st.booleans()))
    hw = resolve_hardware(CAT, node.name, nodes)
    lay = Layout(tp=tp, pp=pp, dp=dp, zero=ZeroStage(draw(st.integers(0, 3))))
    return m, hw, lay, tr


def _finite_nonneg(obj):
    for k, v in vars(obj).items():
        if isinstance(v, float):
            assert math.isfinite(v) and v >= 0, (k, v)


@SETTINGS
@given(setups())
def test_results_finite_and_nonnegative_and_step_at_least_compute(s):
    m, hw, lay, tr = s
    mem = estimate_memory(m, hw, lay, tr, Assumptions())
    for stage in mem.stages:
        _finite_nonneg(stage)
    stp = estimate_step(m, hw, lay, tr, Assumptions(), mem)
    _finite_nonneg(stp)
    assert stp.step_time_s >= stp.compute_s


@SETTINGS
@given(setups())
def test_zero_stages_are_ordered(s):
    m, hw, lay, tr = s
    tot = [estimate_memory(m, hw, lay.model_copy(update={"zero": ZeroStage(z)}), tr,
                           Assumptions()).worst.total_bytes for z in range(4)]
    # states shrink with each stage; ZeRO-0 -> 1 swaps a DDP bucket for a ZeRO bucket
    states_only = tr.model_copy(update={"model_states_only": True})
    st_ = [estimate_memory(m, hw, lay.model_copy(update={"zero": ZeroStage(z)}), states_only,
                           Assumptions()).worst.total_bytes for z in range(4)]
    assert st_[3] <= st_[2] <= st_[1] <= st_[0]
    assert tot[2] <= tot[1] * (1 + 1e-12)


@SETTINGS
@given(setups(), st.sampled_from([Offload.CPU, Offload.NVME, Offload.SMARTNIC,
                                  Offload.SUPERCHIP]))
def test_offloading_never_increases_gpu_memory(s, target):
    m, hw, lay, tr = s
    base = estimate_memory(m, hw, lay, tr, Assumptions()).worst.total_bytes
    off = estimate_memory(m, hw, lay.model_copy(update={"offload": target}), tr,
                          Assumptions()).worst.total_bytes
    assert off <= base * (1 + 1e-12)


@SETTINGS
@given(setups())
def test_memory_non_increasing_in_dp_for_zero(s):
    m, hw, lay, tr = s
    assume(lay.zero >= 1)
    big = resolve_hardware(CAT, hw.node.name, hw.nodes * 2)
    lay2 = lay.model_copy(update={"dp": lay.dp * 2})
    a = estimate_memory(m, hw, lay, tr, Assumptions()).worst.total_bytes
    b = estimate_memory(m, big, lay2, tr.model_copy(update={"global_batch": tr.global_batch * 2}),
                        Assumptions()).worst.total_bytes
    assert b <= a * (1 + 1e-12)


@SETTINGS
@given(st.sampled_from(list(C.Collective)), st.sampled_from(list(C.Algo)),
       st.sampled_from(NODES), st.integers(1, 64), st.floats(1, 1e11), st.floats(1.0, 4.0))
def test_comm_monotone_in_size_and_free_for_one_rank(coll, algo, node, ranks, z, k):
    assume(coll in C.ALLOWED[algo])
    hw = resolve_hardware(CAT, node, 1)
    gpn = hw.gpus_per_node
    n = ranks if ranks <= gpn else gpn * (ranks // gpn)
    topo = C.topology(hw, n, link_catalog=lambda name: CAT.get(name, "link"))
    assume(algo is not C.Algo.NVLS or topo.nvls_Bps is not None)  # one full NVLS node only
    t1 = C.collective_time(coll, algo, z, topo).time_s
    t2 = C.collective_time(coll, algo, z * k, topo).time_s
    assert math.isfinite(t1) and 0 <= t1 <= t2
    one = C.topology(hw, 1, link_catalog=lambda name: CAT.get(name, "link"))
    assert C.collective_time(coll, algo, z, one).time_s == 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(), st.sampled_from(["dgx-a100", "xe8545", "gh200-nvl2"]),
       st.sampled_from(["throughput", "memory"]))
def test_planner_recommendation_is_feasible_and_optimal(m, node, objective):
    import numpy as np

    from optimus_calc.search.inputs import offload_targets
    from optimus_calc.search.plan import plan
    from optimus_calc.search.space import enumerate_space
    from tests_support import evaluate_space
    hw = resolve_hardware(CAT, node, 1)
    base = Training(seq_len=1024, global_batch=16)
    res = plan(m, hw, base, Assumptions(), objective, 3)
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 16, 1024, offload_targets(hw))
    ev, _ = evaluate_space(space, m, hw, base, Assumptions())
    ok = ev["feasible"] & ev["runs"]
    if res.recommended is None:
        assert not ok.any()
        return
    assert res.recommended.memory.fits
    key = -ev["tokens_per_s"] if objective == "throughput" else ev["gpu_bytes"]
    rec = (-res.recommended.tokens_per_s if objective == "throughput"
           else res.recommended.gpu_bytes)
    assert rec <= np.min(key[ok]) + abs(np.min(key[ok])) * 1e-9
