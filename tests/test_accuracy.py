"""Issue 32's method: every public row a case with its source, leave-one-source-out (LOSO)
cross-validation of the fitted efficiencies, and attention at its end-to-end efficiency."""

import pytest

from optimus_calc.public_cases import public_rows
from optimus_calc.validate_loso import FitRow, fit, fold_of, loso, predict


def _row(key, fold, published, pred0=100.0):
    # a = 0, no attention, W so large that eta_d = eta_max: S = c_d / eta_max, so a rate
    # predicted as pred0 at eta_max0 becomes pred0 x eta_max / eta_max0
    return FitRow(key, fold, "h100", "h100-sxm", "cudnn", 0.0, 1.0, 0.0, 1e21, published,
                  pred0, False)


P0 = {"eta_max": 0.5, "W_half": 10.0, "eta_u": 0.2, "eta_a:cudnn": 0.3,
      "scale:h100-sxm-500w": 1.0}


def test_loso_by_hand():
    # source A publishes 120 where eta_max 0.5 predicts 100: it needs eta_max 0.6; source B
    # publishes 140: it needs 0.7. In-sample on A alone: 0.6, error 0
    rows = [_row(0, "A", 120.0), _row(1, "A", 120.0), _row(2, "B", 140.0)]
    assert fit(rows[:2], P0, ("eta_max",))["eta_max"] == pytest.approx(0.6)
    assert predict(rows[:1], {**P0, "eta_max": 0.6}, P0)[0] == pytest.approx(120.0)
    res = loso(rows, {"h100": P0}, ("eta_max",))
    # A held out: refit on B alone (0.7), A predicted 100 x 0.7 / 0.5 = 140, +16.7% of 120;
    # B held out: refit on A (0.6), B predicted 120, -14.3% of 140
    assert res.predictions[0] == pytest.approx(140.0) == res.predictions[1]
    assert res.predictions[2] == pytest.approx(120.0)
    assert res.predictions[0] / 120 - 1 == pytest.approx(1 / 6)
    # fitted on every row: the mean |log error| is least between the two, weighted 2:1 to A
    assert res.full_fit["h100"]["eta_max"] == pytest.approx(0.6)


def test_loso_without_other_sources_keeps_the_shipped_value():
    res = loso([_row(0, "A", 120.0)], {"h100": P0}, ("eta_max",))
    assert res.predictions[0] == pytest.approx(100.0)  # nothing to refit on: shipped


def test_a_fp8_row_is_predicted_never_fitted():
    fp8 = FitRow(0, "A", "h100", "h100-sxm", "cudnn", 0.0, 1.0, 0.0, 1e21, 500.0, 100.0,
                 False, fitted=False)
    assert fit([fp8], P0, ("eta_max",))["eta_max"] == 0.5


def test_fold_is_the_publication():
    assert fold_of("torchtitan benchmarks/llama3_h100_202412_torchtitan.md @ 73a0e69 Table 2 "
                   "(docs/reference/framework-physics.md 7.4)") == \
        "torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
    assert fold_of("Megatron-Bridge docs/performance-summary.md, release 25.11 (x 7.2, @ 00b7660)"
                   ) == fold_of("Megatron-Bridge docs/performance-summary.md, release 25.11 "
                                "(y 7.3)")


def test_every_public_row_has_a_source_and_a_value():
    rows = public_rows()
    # 70 expressible, 32 not; NeMo's long-sequence page (public_cases_long.py): 9 H100 runs
    # with CP expressible, its 6 runs without CP (layout unpublished) and 8 B200 rows not;
    # Megatron-Bridge 25.09 (public_cases_2509.py): 13 dense and 13 MoE rows (FP8-CS and, where
    # the cell has one, MXFP8), one of them listed (GB200 DeepSeek-V3 MXFP8's layout);
    # MosaicML's MPT tables (public_cases_mpt.py): 216 rows, all cases; the Llama 3 paper's
    # Table 4 (public_cases_long.llama3_rows): 3 rows, all cases; Megatron-LM's examples/llama
    # table (public_cases_mlm.py): 3 rows, the 70B one listed (Megatron-Bridge's same figure);
    # Megatron-DeepSpeed's long-sequence table (public_cases_mds.py): 8 + 2 rows, all listed;
    # NeMo's 24.07 table (public_cases_nemo2407.py): 12 rows, 5 cases; Megatron-Bridge's
    # 26.02 (less the 3 rows already in _megatron_dense), 26.02.01, 26.04, 26.04.01, 26.06,
    # 26.06.01 and 26.08 pre-training tables (public_cases_mb26.py): 33 - 3 + 36 + 44 + 47 +
    # 31 + 14 + 18 = 220 rows, 58 of them expressible; 77 once the 19 GB200 HybridEP rows
    # (DeepSeek-V3 7, Qwen3-235B-A22B 7, GPT-OSS 120B 5) run --moe-dispatcher hybridep;
    # BLOOM-176B's training logs (public_cases_mds.bloom_rows): 2; torchtitan's mxfp8.md B200
    # table (public_cases_tt.py) and torchao's rowwise row: 5; DistFlashAttn's Tables 1 and 4
    # (public_cases_dfa.py): 40; IBM's fms-fsdp table (public_cases_fms.py): 8; TinyLlama's
    # README (public_cases_small.py): 1; torchtitan's A100 Llama 2 table (public_cases_tt.py): 5;
    # its 405B table on 128 H100: 3; the PyTorch blog's table of the fms-fsdp runs: 8; NeMo
    # AutoModel's pre-training table on H100 (public_cases_automodel.py): 10; MT-NLG 530B's
    # scaling rows (public_cases_mds.mtnlg_rows): 3, listed; torchtitan's nvfp4.md: 6; its
    # mxfp8.md's MoE table: 2
    assert len(rows) == (125 + 26 + 216 + 3 + 3 + 10 + 12 + 220 + 2 + 5 + 40 + 8 + 1 + 5 + 3 + 8
                         + 10 + 3 + 6 + 2)
    assert all(r.source.strip() and r.label.strip() and r.published > 0 for r in rows)
    # a row the tool cannot express says why; the others are layouts the tool runs
    assert all(r.why_not or r.node for r in rows)


def test_validate_counts(cat):
    from optimus_calc.validate import PUBLIC_SECTION, not_expressed, run_all
    from optimus_calc.validate_table import overall
    cases = run_all(cat)
    missing = not_expressed(cat)
    public = [c for c in cases if c.section == PUBLIC_SECTION]
    # 70 expressible rows (the five dense MXFP8 rows of Megatron-Bridge 25.11/26.02 and NeMo
    # 25.07 run with --fp8-recipe mxfp8; the MoE rows of public_cases_moe: two Qwen3-30B-A3B
    # MXFP8 rows, Qwen3-235B-A22B on H100, DeepSeek-V3 on B200 and H100 made cases), 11 of
    # them with a published GPU memory: 81 cases; 32 listed. torchtitan's Table 5 (405B, PP 8,
    # 1F1B and interleaved: micro-batch = local batch / 8) became cases, and Tables 5-6 carry
    # their published memory: 89 cases, 30 listed. NeMo's long-sequence page: 98 cases, 44 listed
    # ... the 25.09 table: 25 more cases, 1 more listed; FA2 Table 1's four FlashAttention-1
    # rows (kernel fa1) and MPT's 216 rows (209 BF16, 7 FP8) cases; the Llama 3 paper's 3;
    # Megatron-LM's examples/llama table: 2 cases, 1 listed; Megatron-DeepSpeed's long-sequence
    # table: 10 listed (batch unpublished); NeMo's 24.07 table: 5 cases, 7 listed;
    # Megatron-Bridge 26.02-26.08 (public_cases_mb26.py): 58 expressible rows, all cases
    # (GB200 20 + 5, H100 19, B200 14; the 5 GB200 Llama3.1 405B MXFP8 PP 16 VP 8 rows, 128
    # virtual stages for 126 layers, run since the embedding and the loss may take a chunk
    # each), 162 listed. The GB200 HybridEP rows inside the NVL72 rack (--moe-dispatcher
    # hybridep): 25.11's 4 (public_cases_moe) and 26.02-26.08's 19 (public_cases_mb26) cases,
    # 143 of 26.02-26.08 listed; GB300's 18 dense rows on the gb300-nvl72 rack: 125 listed;
    # the Blackwell Ultra MoE rows with their configs (public_cases_mb26_bw.py), GB300's 29 on
    # the rack and B300's 19 on dgx-b300: 77 listed; BLOOM-176B's training logs (public_cases_mds
    # .bloom_rows): 2 cases; 26.06.01's two GPT-OSS 120B rows (GB200, GB300), which the table
    # marks as a known regression (public_cases_mb26.REGRESSION): listed, 2 fewer cases
    # ...; Megatron-Bridge 26.02-26.06's dense NVFP4 rows (--precision nvfp4): 17 cases, 17
    # fewer listed (the 18th, 26.02.01's GB300 70B cell, has a layout that cannot run);
    # torchtitan's mxfp8.md B200 table: BF16 and float8 tensorwise with their peak memory, 4
    # cases; its two MXFP8 rows (torchao's casts) and torchao's float8 rowwise listed;
    # DistFlashAttn's Megatron-LM LLaMA-7B times on one A100 box: 3 cases, its other 37 listed;
    # fms-fsdp's 70B on 128 A100: 1 case, its other 7 cells listed; TinyLlama 1.1B: 1 case;
    # torchtitan's A100 Llama 2 table: 5 cases; its 405B table: 2 cases, async TP listed (until
    # round 24); the PyTorch blog's fms-fsdp table: 1 case (70B on A100), 7 listed; torchtitan's
    # async-TP rows
    # priced with the TP collectives exposed (round 24, public_row.ASYNC_TP): Table 4's with its
    # memory, the 2025-06 benchmark's bf16 and float8 tensorwise 70B and 8B, the 405B Float8 of
    # docs/performance.md: 7 cases, 6 fewer listed; round 25's models (Mixtral-8x22B, the
    # Nemotron 8B / 22B / 340B of NeMo's 24.07 table, fms-fsdp's Llama 2 34B on A100): 5 cases,
    # 5 fewer listed; Megatron-Bridge's four GB300 Kimi-K2 rows (a public shape): 4 more;
    # DistFlashAttn's Megatron-LM LLaMA-7B GQA times on one box (a public shape): 3 more;
    # NeMo AutoModel's H100 table (public_cases_automodel.py): DeepSeek-V3 twice, Kimi-K2,
    # Qwen3-30B-A3B and Llama 3.1 70B, 5 cases; GPT-OSS twice (FlexAttention) and the three
    # Nemotron V3 (Mamba layers) listed, 5; NeMo's B200 long-sequence table at the layout as
    # published, its GPU column as the table's first version counts it (round 28): 8 cases,
    # 8 fewer listed; MT-NLG 530B's three scaling rows (micro-batch unpublished): 3 listed;
    # torchtitan's nvfp4.md (GB200, round 30): Llama 3 8B and Qwen3 8B BF16 with their memory,
    # 4 cases; their MXFP8 and NVFP4 runs (torchao's recipes), 4 listed; mxfp8.md's MoE table
    # (Llama4 Scout, not in the catalog), 2 listed
    assert (len(public), len(missing)) == (
        98 + 25 + 4 + 216 + 3 + 2 + 5 + 58 + 4 + 19 + 18 + 29 + 19 + 2 - 2 + 17 + 4 + 3 + 1 + 1
        + 5 + 2 + 1 + 7 + 5 + 4 + 3 + 5 + 8 + 4,
        44 + 1 - 4 + 1 + 10 + 7 + 162 - 4 - 19 - 18 - 29 - 19 + 2 - 17 + 3 + 37 + 7 + 1 + 7 - 6
        - 5 - 4 - 3 + 5 - 8 + 3 + 4 + 2)
    assert len(cases) + len(missing) >= 150
    assert all(why for _, _, why in missing)
    o = overall(cases)
    # refitted: 62 dense rows in the GPU groups' fit, and the MoE rows outside those groups
    # (B200/GB200: 6) whose host-sync constant is refitted per source (validate_moe.py); the 9
    # NeMo long-sequence H100 rows: 102 and 79; the B200 and GB200 groups refitted too: 99
    # the 25 rows of 25.09 (none on a GPU outside the groups): 127 and 124; the 4 + 216
    # FlashAttention-1 rows (all in the A100 and H100 groups): 347 and 344; the Llama 3 paper's
    # 3 (H100 group): 350 and 347; Megatron-LM's examples/llama 2 (H100 group): 352 and 349;
    # NeMo 24.07's 5 (H100 group): 357 and 354; Megatron-Bridge 26.02-26.08's 53 (B200, GB200
    # and H100, all refitted without their source): 410 and 407; with the 5 PP 16 VP 8 rows,
    # 415 and 412; the 23 GB200 HybridEP rows (GB200 group, refitted): 438 and 435; GB300's 18
    # dense rows (GB200's group, with their fitted factor): 456 and 453; the 48 Blackwell Ultra
    # MoE rows (GB300 in GB200's group, B300 in B200's; their MoE constants refitted without
    # their source): 504 and 501; BLOOM-176B's 2 (A100 group): 506 and 503; less 26.06.01's
    # two GPT-OSS rows now listed (a known regression, GB200 group): 504 and 501; the 17 dense
    # NVFP4 rows (GB200 group, curves refitted without their source; the NVFP4 ratio is not
    # refitted there, benchmarks/fit_nvfp4.py): 521 and 518; torchtitan's two B200 rows (B200
    # group, refitted without their source): 523 and 520; DistFlashAttn's 3 (A100 group): 526
    # and 523; fms-fsdp's 70B (A100 group): 527 and 524; TinyLlama (A100 group): 528 and 525;
    # torchtitan's A100 Llama 2 rows (A100 group): 533 and 530; its 405B (H100 group): 535, 532;
    # the blog's 70B (A100 group): 536 and 533; the 6 async-TP throughput rows (H100 group;
    # scored, not fitted, as the 405B Tables 5-6 rows that run async TP now are, each
    # predicted with the curves refitted without its source): 542 and 539; round 25's 5
    # (Mixtral-8x22B in the B200 group, the three Nemotrons in the H100 group, Llama 2 34B in
    # the A100 group): 547 and 544; Kimi-K2's 4 (GB300 in GB200's group): 551 and 548;
    # DistFlashAttn's 3 GQA rows (A100 group): 554 and 551; AutoModel's 5 (H100 group; the
    # MoE rows' constants and the dense row's curves refitted without their source): 559, 556;
    # NeMo's 8 B200 long-sequence rows (B200 group, refitted without their source): 567, 564;
    # torchtitan's nvfp4.md GB200 BF16 rows (GB200 group, scored, refitted without their
    # source): 569 and 566
    assert o["rows"] == (102 + 25 + 220 + 3 + 2 + 5 + 58 + 23 + 18 + 48 + 2 - 2 + 17 + 2 + 3 + 1
                         + 1 + 5 + 2 + 1 + 6 + 5 + 4 + 3 + 5 + 8 + 2)
    assert o["refitted"] == (99 + 25 + 220 + 3 + 2 + 5 + 58 + 23 + 18 + 48 + 2 - 2 + 17 + 2 + 3 + 1
                             + 1 + 5 + 2 + 1 + 6 + 5 + 4 + 3 + 5 + 8 + 2)


def _mfu(run, node, seq, cp, key="mfu"):
    return run("step", "llama-3-8b", "--node", node, "--nodes", "1", "--seq-len", seq,
               "--cp", cp, "--micro-batch", "1", "--global-batch", "8", "--zero", "3",
               "--recompute", "full", "--format", "json").json()[key]


@pytest.mark.parametrize("node", ["dgx-h100", "dgx-a100"])
def test_mfu_with_sequence_follows_the_attention_efficiency(run, cat, node):
    """issue 32 item 1, in both conventions. The Megatron convention (causal attention halved,
    Megatron-LM's logged TFLOP/s) counts the FLOPs the kernel executes: it falls from 8K to 32K
    (CP 2) to 128K (CP 8) wherever the kernel's end-to-end efficiency is below the GEMMs'
    (H100 cuDNN 0.26, A100 FA2 0.43, against ~0.55 and ~0.7). The un-halved MFU counts each
    attention FLOP twice: with full recomputation it tends to (3 passes x 2) / (4 passes x 1) =
    1.5 x the kernel's efficiency as attention takes over (1.5 x 0.26 = 0.39 on H100, flat from
    8K; 1.5 x 0.43 = 0.645 on A100, rising: FA2 Table 1's un-halved 196 -> 220 TFLOP/s from 2K
    to 8K rises too). At 512K (CP 8) it is within 3% of that limit."""
    from optimus_calc.evaluate.efficiency import kernel_efficiency
    gpu = cat.get("h100-sxm" if node == "dgx-h100" else "a100-80gb", "gpu")
    lay = ((8192, 1), (32768, 2), (131072, 8))
    m = [_mfu(run, node, s, cp, "mfu_causal") for s, cp in lay]
    assert m[0] > m[1] > m[2]
    assert _mfu(run, node, 524288, 8) == pytest.approx(1.5 * kernel_efficiency(gpu), rel=0.03)


def test_published_flops_formula_by_hand():
    # FA2 Table 1's GPT3-1.3B at 8k, un-halved (Dao 2023 section 4.2): 24 layers, h 2048,
    # N = 1.3e9 (round): 6 x 1.3e9 + 12 x 24 x 2048 x 8192 = 7.8e9 + 4,831,838,208 =
    # 12,631,838,208 FLOPs per token; halved: 7.8e9 + 2,415,919,104
    from optimus_calc.equations import compiled as eq
    assert eq.compute__published_flops_per_token(N_pub=1.3e9, c_pub=12, L=24, h=2048,
                                                 s=8192) == pytest.approx(12_631_838_208)
    assert eq.compute__published_flops_per_token(N_pub=1.3e9, c_pub=6, L=24, h=2048,
                                                 s=8192) == pytest.approx(10_215_919_104)


def test_published_flops_count_the_vocabulary_once(cat):
    # NeMo's flops_formulas.llama2 (and Megatron-LM's): the layers, the logits' 6 V h once, no
    # input embedding. Llama-2-7B (untied): 6,738,415,616 parameters - the input embedding
    # 32,000 x 4,096 = 6,607,343,616; at 4K un-halved: 6 x that + 12 x 32 x 4096 x 4096 =
    # 39,644,061,696 + 6,442,450,944 = 46,086,512,640 FLOPs per token (the review's 46.08e9)
    from optimus_calc.validate_public import flops_per_token
    assert flops_per_token(cat.get("llama-2-7b", "model"), 4096, "unhalved") == \
        pytest.approx(46_086_512_640, rel=1e-9)


def test_the_grid_losses_are_the_loss_at_each_value():
    # fit() scores a parameter's whole grid at once (validate_loso._losses): the same numbers
    # as loss() value by value, on rows that read every kind of parameter
    import numpy as np
    from optimus_calc.validate_loso import _losses, _pack, _S, loss
    rows = [FitRow(0, "A", "h100", "h100-sxm", "cudnn", 0.1, 1.0, 0.5, 5e10, 120.0, 100.0,
                   False),
            FitRow(1, "B", "h100", "h100-sxm-500w", "", 0.2, 2.0, 0.3, 2e10, 90.0, 100.0, True),
            FitRow(2, "B", "h100", "h100-sxm", "fa2", 0.0, 1.5, 1.0, 8e10, 80.0, 100.0, False)]
    k = _pack(rows)
    s0 = _S(k, P0)
    for n, vals in (("eta_max", [0.4, 0.6]), ("W_half", [5.0, 20.0]), ("eta_u", [0.1, 0.3]),
                    ("eta_a:cudnn", [0.2, 0.4]), ("eta_a:fa2", [0.25, 0.45]),
                    ("scale:h100-sxm-500w", [0.8, 1.0])):
        got = _losses(k, P0, n, np.array(vals), P0, s0)
        assert got.tolist() == [loss(k, {**P0, n: v}, P0, s0) for v in vals]


def test_h100_kernels_are_tied_by_the_fa3_papers_forward_and_backward_rates():
    # Shah et al. 2024 at 8k, head dim 128: forward (causal) and backward TFLOP/s, the backward
    # 2.5x the forward's FLOPs: FA2 3.5 / (1/333 + 2.5/318) = 322.1, cuDNN 3.5 / (1/529 +
    # 2.5/518) = 521.1, FA3 3.5 / (1/602 + 2.5/559) = 570.6
    from optimus_calc.validate_loso import TIED
    assert TIED["h100"]["eta_a:cudnn"] == ("eta_a:fa2", pytest.approx(521.1 / 322.1, rel=1e-3))
    assert TIED["h100"]["eta_a:fa3"] == ("eta_a:fa2", pytest.approx(570.6 / 322.1, rel=1e-3))
    assert "a100" not in TIED  # measured on H100 only


def test_a_cudnn_row_fits_the_fa2_level_and_cudnn_follows():
    # two cuDNN rows (one fixes eta_max alone), all attention (a = c_d = 0, c_a = 1), each
    # published 120 where the shipped cuDNN 0.3 predicts 100: it needs cuDNN 0.36 = 1.6176 x
    # FA2, FA2 0.2226; on the 0.01 grid
    # 0.22 (|log(1.6176 x 0.22 / 0.36)| = 0.0115 against 0.0329 at 0.23); cuDNN 0.22 x 1.6176
    p0 = {"eta_max": 0.9, "W_half": 10.0, "eta_u": 0.2, "eta_a:cudnn": 0.3, "eta_a:fa2": 0.2}
    row = FitRow(0, "A", "h100", "h100-sxm", "cudnn", 0.0, 0.0, 1.0, 1e21, 120.0, 100.0, False)
    p = fit([row, row], p0, ("eta_a:fa2", "eta_a:cudnn"))
    assert p["eta_a:fa2"] == pytest.approx(0.22)
    assert p["eta_a:cudnn"] == pytest.approx(0.22 * 521.1 / 322.1, rel=1e-3)
    # the shipped values need not follow the tie: the shipped prediction was made at cuDNN 0.3,
    # and under any parameters the row reads FA2 x 1.6176 (at the shipped FA2 0.2: 107.8)
    assert predict([row], p0, p0)[0] == pytest.approx(100 * 0.2 * 521.1 / 322.1 / 0.3, rel=1e-3)
    # and under the fit: 100 x 0.3559 / 0.3 = 118.6
    assert predict([row], p, p0)[0] == pytest.approx(100 * 0.22 * 521.1 / 322.1 / 0.3, rel=1e-3)


def test_a_tied_kernels_row_without_other_sources_keeps_its_shipped_prediction():
    # one cuDNN row with attention (c_a = 1), alone in its group: nothing to refit on, so its
    # LOSO prediction is the shipped 100 (before: read as FA2 0.2 x 1.6176 = 0.3235 against the
    # shipped cuDNN 0.3, 100 x 0.3235 / 0.3 = 107.8)
    p0 = {"eta_max": 0.9, "W_half": 10.0, "eta_u": 0.2, "eta_a:cudnn": 0.3, "eta_a:fa2": 0.2}
    row = FitRow(0, "A", "h100", "h100-sxm", "cudnn", 0.0, 0.0, 1.0, 1e21, 120.0, 100.0, False)
    assert loso([row], {"h100": p0}, ("eta_max", "eta_a:fa2")).predictions[0] == \
        pytest.approx(100.0)


def test_a_refit_reports_the_tied_value_its_rows_read():
    # training rows without a fused kernel (unfused, c_a = 0: FA2 not informed): the refit's
    # cuDNN is the held FA2 0.2 x 521.1 / 322.1 = 0.3236, and the held-out cuDNN row is
    # predicted at that value, 100 x 0.3236 / 0.3 = 107.9 (eta_max stays 0.9: the unfused rows
    # publish what they predict)
    p0 = {"eta_max": 0.9, "W_half": 10.0, "eta_u": 0.2, "eta_a:cudnn": 0.3, "eta_a:fa2": 0.2}
    held = FitRow(0, "A", "h100", "h100-sxm", "cudnn", 0.0, 0.0, 1.0, 1e21, 120.0, 100.0, False)
    train = [FitRow(i, "B", "h100", "h100-sxm", "", 0.0, 1.0, 0.0, 1e21, 100.0, 100.0, False)
             for i in (1, 2)]
    names = ("eta_max", "eta_a:fa2", "eta_a:cudnn")
    assert fit(train, p0, names)["eta_a:cudnn"] == pytest.approx(0.2 * 521.1 / 322.1, rel=1e-3)
    assert loso([held, *train], {"h100": p0}, names).predictions[0] == \
        pytest.approx(100 * 0.2 * 521.1 / 322.1 / 0.3, rel=1e-3)
