"""ZeRO-3 under the Megatron-LM profile is Megatron-FSDP (optim_grads_params), not DeepSpeed's
per-submodule ZeRO-3: one gather and one reduce-scatter per TransformerLayer (the default
fsdp_unit_modules, megatron/core/distributed/fsdp/mcore_fsdp_adapter.py L163-173 @ d98e8a6),
and the next unit always prefetched while the current one computes (megatron_fsdp/
param_and_grad_buffer.py L4487-4512: the AllGatherPipeline adds the next bucket group before
it checks the prefetch size; no live-parameter cap as DeepSpeed's stage3_max_live_parameters).
"""

from __future__ import annotations

import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.work import modules_per_layer
from optimus_calc.frameworks import plugin
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training

# One Llama-3-70B layer (h 8192, 8 KV heads x 128, FFN 28672, SwiGLU, 2 RMSNorms):
# q and o 8192 x 8192 = 67,108,864 each; k and v 8192 x 1024 = 8,388,608 each;
# the MLP 3 x 8192 x 28672 = 704,643,072; norms 2 x 8192 = 16,384: 855,654,400 parameters
LLAMA3_70B_LAYER = 2 * 67_108_864 + 2 * 8_388_608 + 704_643_072 + 16_384


def _asm(framework, model=None):
    _, asm, _, _ = plugin(framework).profile.apply(Training(seq_len=8192), Assumptions(), model)
    return asm


def test_one_gather_per_transformer_layer(cat):
    m = cat.get("llama-3-8b", "model")
    # DeepSpeed hooks every parameterised submodule: q, k, v, o + 3 SwiGLU matrices + 2 norms
    assert modules_per_layer(m, _asm("deepspeed", m)) == 9
    # Megatron-FSDP: the TransformerLayer is the unit
    assert modules_per_layer(m, _asm("megatron", m)) == 1


def test_next_unit_prefetched_however_large():
    assert LLAMA3_70B_LAYER == 855_654_400
    ds, mg = _asm("deepspeed"), _asm("megatron")
    # DeepSpeed: 2 x 855.7M = 1.71e9 live parameters > stage3_max_live_parameters 1e9: no
    # prefetch of a 70B layer (partitioned_param_coordinator.py L354-359)
    assert eq.offload__zero3_prefetch_depth(B_pf=ds.zero3_prefetch_bucket_params,
                                            M_live=ds.zero3_max_live_params,
                                            p_m=LLAMA3_70B_LAYER) == 0
    # Megatron-FSDP prefetches the next unit (double buffering), whatever its size
    assert eq.offload__zero3_prefetch_depth(B_pf=mg.zero3_prefetch_bucket_params,
                                            M_live=mg.zero3_max_live_params,
                                            p_m=LLAMA3_70B_LAYER) == 1


_ROW = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", 1, "--framework", "megatron",
        "--zero", 3, "--micro-batch", 1, "--global-batch", 128, "--seq-len", 8192,
        "--precision", "fp8", "--fp8-recipe", "te-current", "--format", "json")


def test_megatron_bridge_8b_fsdp_row(run):
    """Megatron-Bridge 25.11's 'H100 Llama3 8B FP8-CS FSDP, 8 GPUs' (validate section 12)."""
    got = run(*_ROW).json()["dp_comm_exposed_s"]
    # 16 micro-batches (128 / 8 DP), 32 units. By hand, with Llama 3 8B's P = 8,030,261,248
    # parameters, the 8-GPU NVLink ring at 450 x 0.82 = 369 GB/s per direction (catalog
    # nvlink4), bus factor 7/8 and NCCL's Simple ring base latency 8.4 us (its 7 steps'
    # 7 x 3.4 us = 23.8 us hide under the transfer, comm.nccl_pipelined_time):
    # - FP8 parameters (--fp8-param-gather, on in NVIDIA's FP8-CS recipe): the 6,979,321,856
    #   GEMM weights gather in 1 byte, the rest in 2: 2 P - P_g = 9,081,200,640 B a pass; a
    #   unit's gather moves 283,787,520 B: t_g = 8.4 us + 0.875 x 283,787,520 / 369e9 s =
    #   8.4 + 672.9 = 681.3 us;
    # - a gradient bucket (fp32 grads, 2 GB cap: 17 buckets of P x 4 / 17 = 1,889,473,235 B):
    #   T_bkt = 8.4 + 0.875 x 1,889,473,235 / 369e9 s = 8.4 + 4480.5 = 4488.9 us; the 16
    #   buckets but the last share the backward's link, 16 x T_bkt / 31 = 2316.8 us a unit.
    # Per micro-batch: the fixed cost of 2 passes x 32 units x 50 us = 3.2 ms; the forward waits
    # for the first unit's gather (every later one hides behind a layer's 6.35 ms forward); the
    # backward waits for the first unit's gather (each later gather + 2.3168 ms of reduction
    # hides behind 12.9 ms per layer), and the last bucket follows it, once:
    # 16 x (3.2 + 0.6813 + 0.6813 + 4.4889) ms = 16 x 9.0515 ms = 0.14482 s
    assert got == pytest.approx(16 * (3.2 + 0.6813 + 0.6813 + 4.4889) * 1e-3, rel=1e-3)
    # DeepSpeed's model (before): 9 modules per layer, 288 gathers per pass, 2 x 288 x 50 us =
    # 28.8 ms per micro-batch plus the same waits on 288 smaller pieces: t_g = 8.4 us + 0.875 x
    # 9,081,200,640 / 288 / 369e9 s = 83.2 us (16 x 4488.9 / 287 = 250.3 us of reduction
    # behind each hides too), and the last bucket: 16 x (28.8 + 0.0832 + 0.0832 + 4.4889) ms
    # = 0.53528 s
    old = run(*_ROW[:-2], "--assume", "zero3_modules_per_layer=0",
              "--assume", "zero3_max_live_params=1e9", "--format", "json").json()
    assert old["dp_comm_exposed_s"] == pytest.approx(
        16 * (28.8 + 0.0832 + 0.0832 + 4.4889) * 1e-3, rel=1e-3)
