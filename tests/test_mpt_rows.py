"""MosaicML's MPT benchmark rows (public_cases_mpt.py) and the FlashAttention-1 kernel they
ran: the shapes against the tables' own parameter counts, the layouts as published, the kernel's
catalog entries and its LOSO prior, and un-halved MFU against sequence length on it."""

import pytest

from optimus_calc.errors import InputError
from optimus_calc.evaluate.efficiency import kernel_efficiency, kernel_of
from optimus_calc.public_cases_mpt import ROWS, mpt_rows, shape_key
from optimus_calc.validate_loso import FitRow, fit
from optimus_calc.validate_public import _model, setup


@pytest.mark.parametrize("size,seq,published", sorted({(r[1], r[2], r[10]) for r in ROWS}))
def test_the_shapes_give_the_tables_numparams(cat, size, seq, published):
    # the NumParams column of every row; e.g. MPT-7B at 2048 by hand: 32 layers x (12 x
    # 4096^2 weights + 36,864 biases + 16,384 LayerNorm) + 50,368 x 4096 tied embedding +
    # 2048 x 4096 positions + 8,192 final LayerNorm = 6,658,859,008, the table's value
    m = _model(cat, f"shape:{shape_key(size, seq)}")
    assert m.total_params == published


def test_rows_all_run():
    rows = mpt_rows()
    assert len(rows) == 216 and not any(r.why_not for r in rows)
    assert sum(r.precision == "fp8" for r in rows) == 7
    assert all(r.kernel == "fa1" for r in rows)


def test_fp8_rows_say_what_ran_in_fp8(cat):
    # submit_benchmarks.py @ b2a43a1 L469-470: `if gpu_type == 'h100_80gb' and precision ==
    # 'fp8': parameters['model']['fc_type'] = 'te'`: the rows run as te-delayed and say so.
    # The README's "3b | 512 | 8 | h100_80gb | ... | 36527 | ... | amp_fp8": the row as
    # published, run (a case, not listed), and faster than its BF16 twin on the same GPUs
    # ("3b | 512 | 8 | ... | 27965 | ... | amp_bf16"): FP8 GEMMs at a ratio above the BF16 ones
    from optimus_calc.validate_public import run_row
    fp8 = [r for r in mpt_rows() if r.precision == "fp8"]
    assert all("fc_type te" in r.assumed and "L469-470" in r.assumed for r in fp8)
    row = next(r for r in fp8 if r.label.startswith("MPT-3B seq 512,"))
    bf16 = next(r for r in mpt_rows() if r.label.startswith("MPT-3B seq 512, 8 x H100 80GB BF16"))
    assert (row.published, row.fp8_recipe, bf16.published) == (36527, "te-delayed", 27965)
    assert run_row(cat, row).predicted > run_row(cat, bf16).predicted


def test_a_row_as_published(cat):
    # "7b | 65536 | 8 | a100_80gb | ... | 1 | 2 | 16 | ... | 1013 | ... | FULL_SHARD | True":
    # micro-batch 1, 2 accumulations, 16 sequences on 8 GPUs, ZeRO-3, full checkpointing
    row = next(r for r in mpt_rows() if r.label.startswith("MPT-7B seq 65536, 8 x A100 80GB"))
    assert (row.published, row.gbs, row.mbs, row.zero, row.recompute) == (1013, 16, 1, 3,
                                                                          "full")
    s = setup(cat, row)
    assert (s.layout.dp, s.kernel, s.hw.gpu.name) == (8, "fa1", "a100-80gb")
    assert s.training.global_batch // (s.training.micro_batch * s.layout.dp) == 2
    # 16 x 65,536 tokens over 8 GPUs per step
    assert s.tokens_per_gpu_step == 16 * 65536 / 8


def test_fa1_attention_time_by_hand(cat):
    # compute.compute_time on the attention core: 1e15 executed FLOPs on an A100 (bf16 peak
    # 312 TFLOP/s, NVIDIA A100 datasheet) at FA1's 0.26 take 1e15 / (312e12 x 0.26) = 12.327 s;
    # at FA2's 0.43 (the GPU's default kernel), 7.453 s
    from optimus_calc.evaluate.efficiency import attention_seconds
    gpu = cat.get("a100-80gb", "gpu")
    assert float(attention_seconds(1e15, 312e12, gpu, True, "fa1")) == pytest.approx(12.327,
                                                                                   rel=1e-4)
    assert float(attention_seconds(1e15, 312e12, gpu, True)) == pytest.approx(7.4531, rel=1e-4)


def test_fa1_runs_where_the_catalog_has_it(cat):
    assert kernel_of(cat.get("a100-80gb", "gpu"), "fa1") == "fa1"
    assert kernel_efficiency(cat.get("h100-sxm", "gpu"), "fa1") == pytest.approx(0.15)
    with pytest.raises(InputError, match="--attention-kernel fa1"):
        kernel_of(cat.get("b200", "gpu"), "fa1")


def _row(key, fold, kernel, published):
    # a = 0, c_d = 0: the step is the attention alone, S = 1 / eta_a
    return FitRow(key, fold, "a100", "a100-80gb", kernel, 0.0, 0.0, 1.0, 1e21, published,
                  100.0, False)


P0 = {"eta_max": 0.8, "W_half": 10.0, "eta_u": 0.2, "eta_a:fa2": 0.4, "eta_a:fa1": 0.3}


def test_an_uninformed_fa1_takes_fa2s_value_not_the_shipped_one():
    names = ("eta_a:fa2", "eta_a:fa1")
    # an FA2 row publishing 125 where 0.4 predicts 100 wants eta_a 0.5 (rate ~ eta_a); no
    # FA1 row: FA1 takes 0.5 too, not the shipped 0.3 (fitted on the held-out source)
    p = fit([_row(0, "A", "fa2", 125.0), _row(1, "A", "fa2", 125.0)], P0, names)
    assert p["eta_a:fa2"] == pytest.approx(0.5, abs=0.006)
    assert p["eta_a:fa1"] == p["eta_a:fa2"]
    # an FA1 row of its own: fitted (80 where 0.3 predicts 100 wants 0.24)
    q = fit([_row(0, "A", "fa2", 125.0), _row(1, "B", "fa1", 80.0),
             _row(2, "B", "fa1", 80.0)], P0, names)
    assert q["eta_a:fa1"] == pytest.approx(0.24, abs=0.006)


def _mfu(run, node, seq, cp, kernel):
    return run("step", "llama-3-8b", "--node", node, "--nodes", "1", "--seq-len", seq,
               "--cp", cp, "--micro-batch", "1", "--global-batch", "8", "--zero", "3",
               "--recompute", "full", "--attention-kernel", kernel, "--format",
               "json").json()["mfu"]


@pytest.mark.parametrize("node", ["dgx-h100", "dgx-a100"])
def test_unhalved_mfu_falls_with_sequence_on_fa1(run, node):
    # with full recomputation the un-halved MFU tends to 1.5 x the kernel's efficiency as
    # attention takes over (test_accuracy); FA1's 0.15 (H100) and 0.26 (A100) give 0.225 and
    # 0.39, below the GEMMs' ~0.38 and ~0.52 at 8K: it falls, as MPT's tables do (MPT-7B on
    # A100 80GB: 54.5% at 8K, 49.5% at 32K, 47.0% at 64K)
    m = [_mfu(run, node, s, cp, "fa1") for s, cp in ((8192, 1), (32768, 2), (131072, 8))]
    assert m[0] > m[1] > m[2]


def test_long_sequences_match_cases_of_their_kernel(run):
    # past 8K the regime carries the kernel: MPT's A100 rows at 64K ran FlashAttention-1 (the
    # README's A100 80GB table at 65536 tokens on 8 GPUs: 7b, 3b, 1b, 760m, 350m, 125m; its
    # A100 40GB table has no 64K row), DistFlashAttn's Megatron-LM LLaMA-7B times at 64K-256K
    # FlashAttention-2 (public_cases_dfa.py; with its GQA variant's three since round 25): a
    # prediction of each kernel reads its own rows
    from optimus_calc.regimes import seq_band
    assert (seq_band(65536, "fa2"), seq_band(16384, "fa1"), seq_band(8192, "fa2")) == \
        (">32K fa2", "8K-32K fa1", "<=8K")
    args = ("step", "llama-3-8b", "--node", "dgx-a100", "--nodes", "1", "--seq-len", "65536",
            "--micro-batch", "1", "--global-batch", "8", "--zero", "3", "--recompute", "full",
            "--cp", "2", "--format", "json")
    fa2, fa1 = run(*args).json(), run(*args, "--attention-kernel", "fa1").json()
    assert fa2["error_range"] == "public"
    assert fa2["error_range_basis"].startswith("6 public cases like this")
    assert fa1["error_range"] == "public"
    assert fa1["error_range_basis"].startswith("6 public cases like this")
