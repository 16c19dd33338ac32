"""Token drop with padding (Megatron-LM --moe-pad-expert-input-to-capacity): no host sync per
MoE layer, the launches of every MoE layer still paid (step.fixed_time), the two constants'
fit (validate_moe.py), and the Megatron-Bridge 25.09 rows that run it (public_cases_2509.py)."""

from __future__ import annotations

import pytest

from optimus_calc.public_cases import public_rows
from optimus_calc.public_cases_2509 import MB2509, M09, rows_2509
from optimus_calc.validate_moe import HostRow, fit, loso
from optimus_calc.validate_public import setup

QWEN = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "1", "--ep", "8", "--zero",
        "1", "--micro-batch", "1", "--global-batch", "8", "--framework", "megatron",
        "--format", "json")


def test_drop_and_pad_pays_the_launches_but_not_the_sync(run):
    # Qwen3-30B-A3B, 48 MoE layers, 1 micro-batch: dropless (1.5 ms sync + 1.8 ms launches)
    # x 48 = 0.1584 s; padded to capacity the dispatcher's counts are static (Megatron-LM
    # core_v0.14.0 token_dispatcher.py L444-467): 1.8 ms x 48 = 0.0864 s, the step 0.072 s less
    dropless = run(*QWEN).json()
    padded = run(*QWEN, "--moe-pad-expert-input-to-capacity").json()
    assert dropless["fixed_s"] == pytest.approx(0.1584)
    assert padded["fixed_s"] == pytest.approx(0.0864)
    assert dropless["step_time_s"] - padded["step_time_s"] == pytest.approx(0.072)
    # ... under the DeepSpeed profile the flag changes nothing (its gate never syncs)
    ds = [a if a != "megatron" else "deepspeed" for a in QWEN]
    assert run(*ds, "--moe-pad-expert-input-to-capacity").json()["fixed_s"] == \
        pytest.approx(run(*ds).json()["fixed_s"]) == pytest.approx(0.0864)


def test_the_export_writes_megatron_lms_token_drop_flags(run):
    args = ("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "8", "--tp", "1", "--pp",
            "1", "--framework", "megatron", "--export", "megatron")
    out = run(*args, "--moe-pad-expert-input-to-capacity").out
    # capacity factor 1.0 as Megatron-Bridge's apply_moe_token_drop; the alltoall dispatcher
    for flag in ("--moe-token-dispatcher-type alltoall", "--moe-expert-capacity-factor 1.0",
                 "--moe-pad-expert-input-to-capacity"):
        assert flag in out
    assert "capacity" not in run(*args).out
    # written once with the EP overlap, which names the dispatcher too
    both = run(*args, "--moe-pad-expert-input-to-capacity",
               "--overlap-moe-expert-parallel-comm").out
    assert both.count("--moe-token-dispatcher-type alltoall") == 1


def test_padding_to_capacity_leaves_no_imbalance(run):
    # capacity factor 1.0, padded: every expert runs exactly capacity = its balanced share of
    # tokens x top-k, and every rank's all-to-all splits are that capacity (core_v0.14.0
    # token_dispatcher.py L444-467: torch.full(..., capacity)); the moe_imbalance assumption is
    # "equal to [the capacity factor] with padding": a most-loaded rank at 1.5x contradicts it
    for extra in (("--moe-imbalance", "1.5"), ("--assume", "moe_imbalance=1.5")):
        for cmd in (QWEN, ("plan", *QWEN[1:6], "--ep", "8", "--tp", "1", "--pp", "1")):
            r = run(*cmd, "--moe-pad-expert-input-to-capacity", *extra)
            assert r.code == 2 and "moe_imbalance 1.5" in r.err, (cmd, extra, r.err)
            assert "--moe-pad-expert-input-to-capacity" in r.err and len(r.err.splitlines()) == 1
    # 1.0 is what padding gives: the padded step as without the flag (fixed 0.0864 s)
    ok = run(*QWEN, "--moe-pad-expert-input-to-capacity", "--moe-imbalance", "1").json()
    assert ok["fixed_s"] == pytest.approx(0.0864)
    # ... and dropless routing keeps its imbalance (no padding: the flag is off)
    assert run(*QWEN, "--moe-imbalance", "1.5").code == 0


def _row(key, fold, published, T, K, K_f):
    return HostRow(key, fold, published, 1000.0, T, K, 0.001, False, K_f, 0.001)


def test_the_fit_separates_the_sync_from_the_launches():
    # a padded row (K = 0, K_f = 100 layer-micro-batches, T = 2 s at 1 ms / 1 ms) published at
    # t_f = 2 ms: T = 2 + 100 x 0.001 = 2.1 s, 1000 x 2 / 2.1 = 952.38 tokens/s; a dropless row
    # (K = K_f = 50, T = 1 s) at t_s = 4 ms, t_f = 2 ms: T = 1 + 50 x 0.003 + 50 x 0.001 = 1.2 s,
    # 1000 / 1.2 = 833.33
    a = _row(0, "a", 1000 * 2 / 2.1, 2.0, 0.0, 100.0)
    b = _row(1, "b", 1000 / 1.2, 1.0, 50.0, 50.0)
    assert fit([a, b]) == pytest.approx((0.004, 0.002))
    # LOSO of b: the padded row a alone fixes t_f = 2 ms but not the sync (K = 0: every t_s
    # ties, the smallest, 0, is taken): b at (0, 2 ms) is T = 1 + 50 x (0 - 0.001) + 50 x 0.001
    # = 1 s, 1000 tokens/s, 20% above its 833.33
    th_b, p_b = loso([a, b])[1]
    assert th_b == pytest.approx((0.0, 0.002)) and p_b == pytest.approx(1000.0)


def test_every_row_of_the_2509_table_is_there():
    rows = rows_2509()
    dense, moe = [r for r in rows if r.source == MB2509], [r for r in rows if r.source == M09]
    # GB200 8B, 70B, 405B x (FP8-CS, MXFP8), B200 8B, 405B x 2, H100 8B, 70B, 405B: 13;
    # GB200/B200 Qwen3-30B, Qwen3-235B, DeepSeek-V3 x 2 (B200 Qwen3-30B one figure), H100
    # Qwen3-30B and Qwen3-235B: 13 (H100 DeepSeek-V3, dropless, is in public_cases_moe.py)
    assert (len(dense), len(moe)) == (13, 13)
    # the published figures of the table (performance-summary.md @ fa0315ae2)
    pub = {r.label: r.published for r in rows}
    assert pub["B200 Qwen3-30B-A3B FP8-CS EP8, 8 GPUs (25.09)"] == 18066
    assert pub["GB200 Llama3 70B MXFP8 TP2 PP4 VP5, 64 GPUs (25.09)"] == 3546
    assert pub["H100 Qwen3-235B-A22B FP8-CS TP2 PP8 VP4 EP32, 256 GPUs (25.09)"] == 1204
    # every MoE row but the listed one runs token drop padded to capacity; the dense rows don't
    assert all(r.drop_pad for r in moe if not r.why_not) and not any(r.drop_pad for r in dense)
    (listed,) = [r for r in rows if r.why_not]
    assert listed.label.startswith("GB200 DeepSeek-V3 MXFP8")
    assert "32 GPUs a stage" in listed.why_not


def test_the_mixtral_rows_run_drop_and_pad_too():
    # NeMo's Mixtral recipe: capacity 1.0, padded (callbacks/moe_token_drop.py L38-39)
    mix = [r for r in public_rows() if "Mixtral-8x7B" in r.label]
    assert len(mix) == 2 and all(r.drop_pad for r in mix)
    dsv3 = [r for r in public_rows() if r.label.startswith("H100 DeepSeek-V3")
            and "AutoModel" not in r.label]  # NeMo's table; AutoModel's is balanced, dropless
    assert len(dsv3) == 1 and not dsv3[0].drop_pad  # the table's "(dropless)"


def test_the_tables_layouts_fold_as_published(cat):
    # GB200 Qwen3-235B: TP 2, EP 64 x ETP 1 over TP 2 x DP 32 on 64 GPUs; GA = 1024 / (1 x 32)
    # = 32 as the table's GA column; one 64-GPU NVL72 rack
    (r,) = [r for r in public_rows() if r.label.startswith("GB200 Qwen3-235B-A22B FP8-CS")
            and "25.09" in r.label]
    s = setup(cat, r)
    assert (s.layout.tp, s.layout.dp, s.layout.ep, s.layout.etp) == (2, 32, 64, 1)
    assert s.training.global_batch // (s.training.micro_batch * s.layout.dp) == 32
    assert s.training.moe_pad_expert_input_to_capacity and s.asm.moe_host_sync_min_ep == 1e6


def test_the_shipped_constants_are_the_fit_of_the_public_moe_rows(cat):
    # validate's MoE rows, fitted on validate_moe's 0.1 ms grid: on all 58 (22 of 4 sources,
    # 10 dropless or Mixtral and 12 of 25.09, and the 36 of Megatron-Bridge 26.02-26.08,
    # public_cases_mb26.py, sources "@ 067f987df") the sync 3.2 ms and the launches 2.0 ms; on
    # the 81 with the 23 GB200 HybridEP rows (nvl72) the sync 2.0 ms (1.9 before gpt-oss's
    # sliding window was timed) and the launches 2.0 ms, the
    # Assumptions defaults (on the first 22 alone the grid gave 4.5 and 2.0 ms, shipped before
    # them; 3.4 ms before the expert-DP group rode its own links: CHANGELOG). The three
    # GB200 rows on a full-iteration CUDA graph (26.06-26.08) depend on neither (K = K_f = 0:
    # the Megatron profile sets both to 0 there)
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.validate import run_all
    cases = run_all(cat, cross_validate=False)
    later = {i for i, c in enumerate(cases) if "@ 067f987df" in c.source}
    every = [h for i, c in enumerate(cases) if c.host is not None for h in [c.host(i)] if h]
    rows = [h for h in every if h.key not in later]
    # 22 + the 4 GB200 HybridEP rows of 25.11 (public_cases_moe.py, dropless: K > 0) + NeMo
    # 25.02's Mixtral-8x22B (round 25, padded like its 8x7B: K = 0) + NeMo AutoModel's 4
    # (round 27, DeepEP under the torchtitan profile: K > 0; the refit below unchanged by them)
    assert len(rows) == 27 + 4 and sum(r.K == 0 for r in rows) == 15  # 12 + 3 Mixtral padded
    # + the 19 GB200 HybridEP rows of 26.02-26.08, and the 48 GB300 and B300 rows
    # (public_cases_mb26_bw.py), 14 of them on a full-iteration graph (K = 0: GB300 26.06-26.08
    # DeepSeek-V3 4, GPT-OSS, Qwen3-30B and Qwen3-235B 3 each; B300 Qwen3-30B at 26.06)
    bw = {i for i, c in enumerate(cases) if c.case.startswith(("GB300", "B300"))}
    ultra = [h for h in every if h.key in bw]
    # round 18: less 26.06.01's GPT-OSS rows on GB200 and GB300 (full-iteration graphs, K = 0),
    # listed as the known regression their table calls them
    # round 25: + GB300's four Kimi-K2 rows (no CUDA graphs: K > 0)
    assert len(every) == 27 + 36 + 19 + 48 - 2 + 4 + 4 and len(ultra) == 48 - 1 + 4
    assert sum(h.K == 0 for h in ultra) == 4 + 3 + 3 + 3 + 1 - 1
    # round 15: the constants are fitted on all 129 together with the share of the EP
    # all-to-all the Megatron profile's overlap hides (validate_moe.fit_overlap, on the 39 rows
    # that run it): the sync 1.4 ms, the launches 2.0 ms, the share 0.55, each the fit with the
    # other two at their shipped values (a fixed point: with the share at 1, as assumed before,
    # the grid gave 2.7 ms on the 129; at the first fit's share 0.59, 1.4 ms and then 0.55).
    # Round 16, with the loss over the logits timed (compute.loss_bytes): from 1.4 ms and 0.55
    # the grid gave 1.2 ms and 0.58, then 1.3 ms at 0.58, which gives 0.58 again. Round 17,
    # with the attention kernel's head-dim factor (efficiency.head_dim_attention_efficiency):
    # at 1.3 ms the share refits to 0.60, at 0.60 the sync stays 1.3 ms; but at the round's
    # shipped state 0.60 gives validate's leave-one-source-out 9.96% against 0.58's 9.95% (506
    # rows): a refit that does not lower the held-out error is not shipped, 0.58 stays. Round 18
    # (26.06.01's two GPT-OSS rows listed): the same fixed point on the 127. Round 19, with
    # the embedding and the loss counted as a layer in uneven pipeline splits (shapes.
    # embedding_and_loss_split): at the shipped 1.3 ms and 0.58 the sync refits to 1.4 ms and
    # the share to 0.56; validate's leave-one-source-out error (521 rows) is 9.31% shipped,
    # 9.30% at 1.4 ms, 9.29% at 1.4 ms and 0.57, at which the sync refits to 1.3 ms again: no
    # fixed point on the grids and 0.02 point at most, so the shipped constants stay (every
    # hand-computed MoE fixed cost, 0.1584 s and the rest, with them). Round 21, with the
    # routing bytes counted per sequence-parallel shard at TP > 1 (compute.moe_permute_bytes):
    # at 1.3 ms the share refits to 0.52, and at 0.52 the sync and the launches stay 1.3 and
    # 2.0 ms, a fixed point; the leave-one-source-out error (521 rows) 9.129% at 0.58, 9.089%
    # at 0.52. Then the alltoall dispatcher's sort of the received rows by local expert
    # (token_dispatcher.py L757-789, L803-822; compute.moe_permute_bytes g_p): 8.951% at the
    # same constants, which refit to 1.4 ms, 1.8 ms and 0.56; at those 1.5 ms, 1.8 ms and
    # 0.55; at 1.5 ms, 1.8 ms and 0.56 the fit gives them back, a fixed point: 8.947%, shipped.
    # With GPT-OSS's --recompute-modules timed the sync refits to 1.4 ms (the share and the
    # launches stay): 8.929% there against 8.928% at 1.5 ms, so 1.5 ms stays. Round 22, the
    # Megatron-Bridge and NeMo >= 25.02 rows with the bf16 gradient reduce their scripts set
    # (public_row.bf16_reduce): the sync and the launches refit to 0.2 and 3.1 ms (the same 3.3
    # ms sum; the share stays 0.56), but there validate's leave-one-source-out error (521
    # rows) is 9.695% against the shipped constants' 9.049% (in-sample 8.673% against 8.185%,
    # one regime more above 20%): not shipped. (Round 26 found that figure suspect: measured
    # with `validate --assume`, which also overrides the zeros the Megatron profile sets under a
    # full-iteration CUDA graph, so the shipped constants typed the same way give 9.89%.)
    # Round 26, with B200's and B300's fixed time per GEMM at GB200's (gemm_half_GFLOP 13.1 ->
    # 40.3), measured with the defaults edited: at the shipped constants the grid gives 0.7
    # and 2.4 ms and the share 0.58; at 0.7 ms, 2.4 ms and 0.56 the fit gives them back, a
    # fixed point: validate's leave-one-source-out error (554 rows) 9.293% there against the
    # shipped 9.302% (in-sample 8.219% against 8.226%, three regimes above 20% either way):
    # 0.01 point, under round 19's 0.02, so the shipped constants stay (with the held-out
    # refit from data-independent starts, validate_loso.fit_best: 9.458% against 9.464%).
    # Round 28, with NeMo's B200 long-sequence rows and B200/B300 cuDNN at 0.34 (was 0.26):
    # the grid gives 0.5 and 2.7 ms (the share 0.57); with the defaults edited to those,
    # validate's leave-one-source-out error (567 rows) is 9.857% against the shipped 9.853%
    # (in-sample 8.353% against 8.384%): the held-out error does not fall, the constants stay.
    # Then with AutoModel's gate routing each token to one node (moe_max_nodes 1): 0.6 and
    # 2.7 ms, 9.756% held out against the shipped 9.751% (in-sample 8.246% against 8.292%)
    from optimus_calc.frameworks.megatron import EP_OVERLAP_SHARE
    from optimus_calc.validate_moe import fit_overlap
    a = Assumptions()
    # the refit that was not shipped, and the shipped values it was weighed against
    sync, launches = fit(every)
    assert abs(sync - 0.0006) <= 5e-5 and abs(launches - 0.0027) <= 5e-5  # the 0.1 ms grid
    assert (a.moe_layer_host_s, a.moe_layer_fixed_s) == (0.0015, 0.0018)
    assert sum(h.A > 0 for h in every) == 39 - 2
    assert abs(fit_overlap(every) - EP_OVERLAP_SHARE) <= 0.02 + 1e-12 and EP_OVERLAP_SHARE == 0.56
