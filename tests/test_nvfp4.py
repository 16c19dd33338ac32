"""NVFP4 training (--precision nvfp4): Transformer Engine's NVFP4BlockScaling recipe as
Megatron-LM runs it (--fp4-format e2m1 --fp4-recipe nvfp4). GEMMs at the FP4 peak, 4-bit
weight copies and saved inputs with their E4M3 scales, the amax pass, the refusals, the
framework rules and the export flags. Every expected value is computed by hand in the comment
beside it; the format's sizes come from TransformerEngine transformer_engine/common/recipe/
__init__.py NVFP4BlockScaling (L489-532 @ d0067d0)."""

from __future__ import annotations

import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.efficiency import compute_efficiency
from optimus_calc.evaluate.fp8 import (saved_input_bytes_less, quantized_bytes,
                                       weight_orientations)
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.frameworks import Framework
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.frameworks.registry import layout_support
from optimus_calc.public_cases import public_rows
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Fp8Recipe, Layout, Precision, Training

B200_FP4, B200_BF16 = 9000e12, 2250e12  # dense peaks, HGX B200 at 1,000 W (catalog b200)


def _nvfp4(**kw) -> Training:
    return Training(seq_len=4096, global_batch=64, precision=Precision.NVFP4, **kw)


def test_the_recipe_in_effect():
    assert _nvfp4().gemm_recipe is Fp8Recipe.NVFP4
    assert Training(seq_len=8, precision="fp8", fp8_recipe="mxfp8").gemm_recipe is Fp8Recipe.MXFP8
    # the per-tensor FP32 scale comes from an amax read before the cast (quantizer.cpp
    # L2630-2660), as current scaling's: one pass
    assert Fp8Recipe.NVFP4.amax_passes == 1 and Fp8Recipe.NVFP4.peak == "fp4"


def test_gemm_time_at_the_fp4_peak(cat):
    """--assume gemm_efficiency=0.5 and nvfp4_gemm_efficiency=0.665, no attention: the NVFP4
    GEMMs run at 0.5 x 0.665 = 0.3325 of B200's 9,000 TFLOP/s FP4 peak, i.e. 0.3325 x 9000 /
    2250 = 1.33 of the BF16 peak; 1e15 FLOPs take 1e15 / (2250e12 x 1.33) = 0.334169 s =
    1e15 / (9000e12 x 0.3325)."""
    gpu = cat.get("b200", "gpu")
    assert gpu.peak_TFLOPS.flops_per_s("fp4") == B200_FP4
    asm = Assumptions(gemm_efficiency=0.5, nvfp4_gemm_efficiency=0.665)
    eta = compute_efficiency(gpu, h=8192, t=1, s=4096, b=1, total_flops=1e15, attn_flops=0.0,
                             flash=True, asm=asm, fp8=asm.nvfp4_gemm_efficiency, fp8_peak="fp4")
    assert float(eta) == pytest.approx(1.33, rel=1e-9)
    assert 1e15 / (B200_BF16 * float(eta)) == pytest.approx(0.334169, rel=1e-5)


def test_weight_copies_and_saved_inputs(cat):
    """Per GEMM weight: rowwise and columnwise 4-bit copies (both made from the bf16 tensor,
    recipe L499-505), each with an E4M3 scale stored per 16 values (the 16 x 16 weight-block
    scales too: nvfp4_tensor.py get_scale_shape L273-307): 2 x 0.5 + 2 / 16 = 1.125 bytes.
    A saved GEMM input element: 0.5 + 1/16 = 0.5625 bytes where bf16 keeps 2,
    1.4375 less; llama-2-7b's GEMM inputs of one layer at seq 4096, TP 1 (2h + d_v + f =
    8,192 + 4,096 + 11,008 = 23,296 per token) then save 4096 x 23,296 x 1.4375 =
    137,166,848 bytes."""
    tr = _nvfp4()
    b200 = cat.get("b200", "gpu")
    assert quantized_bytes(tr, Assumptions()) == 0.5
    k_o, q_s = weight_orientations(b200, Fp8Recipe.NVFP4)
    assert float(eq.fp8__weight_copy_bytes(P_g=1, Z=1, b_8=0.5, k_o=k_o, q_s=q_s)) == 1.125
    assert saved_input_bytes_less(tr) == 1.4375
    full = float(eq.fp8__activation_layer_bytes(M_layer=2e9, b=1, c=1, d_v=4096, f_a=11008,
                                                h=4096, k_te=1.4375, r=0, s=4096, sigma=0,
                                                t=1))
    assert 2e9 - full == 137_166_848


def test_nvfp4_is_faster_than_mxfp8_on_blackwell_and_refused_elsewhere(run):
    """llama-3-8b on one DGX-B200 at ZeRO-1: NVFP4's GEMMs at 9,000 x 0.705 against MXFP8's
    at 4,500 x 1.0 (1.41x the rate) with its amax pass: faster, not twice."""
    t = {}
    for prec in (["--precision", "nvfp4"], ["--precision", "fp8", "--fp8-recipe", "mxfp8"]):
        r = run("step", "llama-3-8b", "--node", "dgx-b200", "--zero", 1, *prec,
                "--format", "json")
        assert r.code == 0, r.err
        t[prec[1]] = r.json()["step_time_s"]
    assert t["fp8"] / 2 < t["nvfp4"] < t["fp8"]
    r = run("step", "llama-3-8b", "--node", "dgx-h100", "--precision", "nvfp4")
    assert r.code == 2 and "Traceback" not in r.err
    assert ("--precision nvfp4: h100-sxm has no FP4 (NVFP4) tensor cores (no FP4 peak in the "
            "catalog); use --precision bf16") in r.err
    r = run("step", "llama-3-8b", "--node", "dgx-b200", "--precision", "nvfp4",
            "--fp8-recipe", "te-current")
    assert r.code == 2
    assert "--fp8-recipe te-current needs --precision fp8 (got --precision nvfp4)" in r.err
    r = run("step", "llama-3-8b", "--node", "dgx-b200", "--fp8-recipe", "nvfp4")
    assert r.code == 2 and "Traceback" not in r.err  # not an --fp8-recipe choice


def test_megatron_runs_it_with_its_fp4_flags(cat):
    """Megatron-LM only (DeepSpeed and torchtitan train no NVFP4); its export: --bf16
    --fp4-format e2m1 --fp4-recipe nvfp4 (transformer_config.py L671-686 @ d98e8a6) and, with
    the distributed optimizer, --fp4-param-gather as Megatron-Bridge's bf16_with_nvfp4_mixed
    sets it; never an FP8 flag (arguments.py L1099-1101 refuses both)."""
    m = cat.get("llama-3-8b", "model")
    lay, tr = Layout(dp=8, zero=1), _nvfp4()
    ok = {f for f, x in layout_support(lay, tr, m).items() if x.name == "OK"}
    assert ok == {Framework.MEGATRON}
    args, _ = megatron_arg_list(lay, tr, m, 8)
    d = dict(args)
    assert d["--fp4-format"] == "e2m1" and d["--fp4-recipe"] == "nvfp4"
    assert "--bf16" in d and "--fp4-param-gather" in d
    assert not any(a.startswith("--fp8") for a, _ in args)
    d = dict(megatron_arg_list(Layout(dp=8, zero=0), tr, m, 8)[0])
    assert "--fp4-param-gather" not in d  # no distributed optimizer: bf16 parameters
    # Megatron-FSDP (ZeRO 3) keeps no NVFP4 parameters (Fp8Recipe.params_max_zero): the
    # flag is not written (found by running Megatron-LM's own validate_args on the export)
    d = dict(megatron_arg_list(Layout(dp=8, zero=3), tr, m, 8)[0])
    assert "--fp4-param-gather" not in d and "--fp4-format" in d


def test_fp4_parameters_save_memory_under_the_distributed_optimizer(cat):
    """llama-3-8b on 8 B200 at ZeRO-1 under the Megatron-LM profile: with --fp4-param-gather
    the GEMM weights are held as NVFP4 only, so the bf16 copy of them (2 bytes each) is not
    kept: the weights shrink by 2 x P_g (fp8.primary_weight_saving_bytes at b_8 0.5)."""
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.frameworks.physics import apply_framework
    m, hw = cat.get("llama-3-8b", "model"), resolve_hardware(cat, "dgx-b200", 1)
    lay = Layout(dp=8, zero=1)
    got = {}
    for gather in (True, False):
        tr, asm, _ = apply_framework("megatron", lay, _nvfp4(fp8_param_gather=gather),
                                     Assumptions(), m)
        got[gather] = estimate_memory(m, hw, lay, tr, asm).worst.weights_bytes
    # the GEMM weights of the 32 layers: attention 4096 x (4096 + 2 x 1024 + 4096) = 41,943,040
    # and MLP 3 x 4096 x 14336 = 176,160,768 per layer, 218,103,808; x 32 = 6,979,321,856
    p_g = 6_979_321_856
    assert got[False] - got[True] == pytest.approx(2 * p_g, rel=1e-9)
    # under Megatron-FSDP (ZeRO 3) the flag saves nothing: no NVFP4 parameters there
    lay3 = Layout(dp=8, zero=3)
    for gather in (True, False):
        tr, asm, _ = apply_framework("megatron", lay3, _nvfp4(fp8_param_gather=gather),
                                     Assumptions(), m)
        got[gather] = estimate_memory(m, hw, lay3, tr, asm).worst.weights_bytes
    assert got[False] == got[True]


def test_public_rows_are_cases():
    """Megatron-Bridge 26.02-26.06's dense NVFP4 rows are validate cases (17: Llama 3 70B and
    Llama 3.1 405B on GB200 and GB300), not listed; 26.02.01's GB300 70B cell, whose TP 1 PP 1
    layout cannot hold the model, and Nemotron 3 Super (not in the catalog) stay listed."""
    from optimus_calc.public_cases_tt import TT_NVFP4  # torchao's NVFP4: test_tt_nvfp4_rows
    rows = [r for r in public_rows() if "NVFP4" in r.label and r.source != TT_NVFP4]
    scored = [r for r in rows if not r.why_not]
    assert len(scored) == 17 and {r.precision for r in scored} == {"nvfp4"}
    listed = [r.why_not for r in rows if r.why_not]
    assert sum("not in the catalog" in w for w in listed) == len(listed) - 1
    assert sum(w.startswith("the table's layout cannot run") for w in listed) == 1


def test_step_time_moves_with_the_ratio(cat):
    """The ratio divides the GEMM time only: halving it leaves the step between its old value
    and twice it."""
    m, hw = cat.get("llama-3-8b", "model"), resolve_hardware(cat, "dgx-b200", 1)
    lay, tr = Layout(dp=8, zero=1), _nvfp4()
    a = estimate_step(m, hw, lay, tr, Assumptions(nvfp4_gemm_efficiency=0.6)).step_time_s
    b = estimate_step(m, hw, lay, tr, Assumptions(nvfp4_gemm_efficiency=0.3)).step_time_s
    assert a < b < 2 * a


def test_activations_and_amax_wired_into_the_step(cat, monkeypatch):
    """The evaluator's wiring. Activations: llama-3-8b at seq 4096, micro-batch 1, TP 1, no
    recomputation: each layer's saved GEMM inputs are 4096 x (2 x 4096 + 4096 + 14336) =
    109,051,904 elements; NVFP4 keeps 1.4375 bytes less of each, current-scaling FP8 1 byte
    less, so NVFP4's activations are 0.4375 x 109,051,904 x 32 layers = 1,526,726,656 bytes
    below te-current's. The amax pass: llama-2-7b on 8 B200 at ZeRO-1, seq 4096, global 64
    (8 micro-batches a GPU): forward and backward each read the 95,420,416 input elements of
    a layer once more in bf16, 2 x 190,840,832 bytes x 32 layers x 8 = 97.71 GB at B200's
    8,000 GB/s x 0.9 (hbm_efficiency) = 13.571 ms, what the step loses with it."""
    from optimus_calc.evaluate.memory import estimate_memory
    m, hw = cat.get("llama-3-8b", "model"), resolve_hardware(cat, "dgx-b200", 1)
    lay = Layout(dp=8, zero=1)
    act = {}
    for kw in (dict(precision=Precision.NVFP4), dict(precision=Precision.FP8,
                                                       fp8_recipe="te-current")):
        tr = Training(seq_len=4096, global_batch=8, **kw)
        act[kw["precision"]] = estimate_memory(m, hw, lay, tr, Assumptions()).worst.activations_bytes
    assert act[Precision.FP8] - act[Precision.NVFP4] == pytest.approx(1_526_726_656, rel=1e-9)
    m2 = cat.get("llama-2-7b", "model")
    assert hw.gpu.hbm_bandwidth_GBps == 8000
    tr = Training(seq_len=4096, global_batch=64, precision=Precision.NVFP4)
    with_amax = estimate_step(m2, hw, lay, tr, Assumptions()).step_time_s
    monkeypatch.setattr(Fp8Recipe, "amax_passes", property(lambda self: 0))
    without = estimate_step(m2, hw, lay, tr, Assumptions()).step_time_s
    assert 2 * 190_840_832 * 32 * 8 / (8000e9 * 0.9) == pytest.approx(0.013571, rel=1e-4)
    assert with_amax - without == pytest.approx(2 * 190_840_832 * 32 * 8 / (8000e9 * 0.9),
                                                rel=1e-6)


def test_sensitivity_and_calibrate_read_the_fp4_peak(run, tmp_path):
    """`breakeven --sensitivity` varies the FP4 peak under NVFP4 (it crashed looking for a
    peak named nvfp4), and `calibrate` bounds an NVFP4 run by the FP4 peak, not the BF16 one:
    Megatron-Bridge 26.02's GB300 Llama 3 70B NVFP4 row, 6,798 tokens/s/GPU x 64, implies an
    MFU of about 1.3 against the BF16 peak but stays below 15,000 / 2,500 = 6 (catalog gb300)."""
    r = run("breakeven", "llama-3-8b", "--node", "dgx-b200", "--precision", "nvfp4",
            "--sensitivity", "--format", "json")
    assert r.code == 0, r.err
    assert "peak_TFLOPS.fp4" in r.out
    runs = tmp_path / "runs.csv"
    runs.write_text("model,node,gpus_per_node,tp,pp,interleave,zero,seq_len,global_batch,"
                    "micro_batch,framework,precision,measured_tokens_per_s\n"
                    "llama-3-70b,gb300-nvl72,64,1,4,5,1,8192,256,1,megatron,nvfp4,435072\n"
                    "llama-3-70b,gb300-nvl72,64,2,4,5,1,8192,256,1,megatron,nvfp4,420000\n")
    r = run("calibrate", runs, "-o", tmp_path / "p.toml")
    assert r.code == 0, r.err
    runs.write_text(runs.read_text().replace("420000", "9000000"))
    r = run("calibrate", runs, "-o", tmp_path / "q.toml")
    assert r.code == 2 and "above the 6 its FP4 peak allows" in r.err
