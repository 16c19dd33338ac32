"""The note after "DOES NOT FIT" in `step` and `memory` (analyses/fit_hint.py): the fewest of
--zero, --recompute and --cp that make the layout fit, each candidate resolved as if typed."""

import pytest

BASE = ("llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--micro-batch", "1",
        "--global-batch", "8")
# Llama 3 8B: 8,030,261,248 parameters (catalog; Meta's config.json). Mixed-precision Adam,
# 16 bytes each: 128.48 GB of model states on every GPU at ZeRO-0, above the 76.0 GB an
# H100 SXM offers with the default 5% headroom (80 GB x 0.95). ZeRO-3 over DP 8 divides
# them by 8: 16.06 GB.
N = 8_030_261_248
USABLE = 80e9 * 0.95


def _json(run, *args):
    res = run(*args, "--format", "json")
    assert res.code == 0, res.err
    return res.json()


@pytest.mark.parametrize("cmd", ["step", "memory"])
def test_zero0_does_not_fit_and_the_hint_fits(run, cmd):
    assert 16 * N > USABLE  # 128.48 GB of states alone: no ZeRO-0 layout fits
    d = _json(run, cmd, *BASE, "--seq-len", "8192")
    assert d["fits"] is False and d["fit_hint"] is not None
    flags = d["fit_hint"]["flags"].split()
    # the hint is a layout the user can type: its own run fits, at the memory the hint states
    again = _json(run, cmd, *BASE, "--seq-len", "8192", *flags)
    assert again["fits"] is True and again["fit_hint"] is None
    mem = again["gpu_memory_bytes"] if cmd == "step" else again["per_gpu"]["total_bytes"]
    assert mem == pytest.approx(d["fit_hint"]["gpu_memory_bytes"], rel=1e-9)
    assert mem <= USABLE


def test_the_fewest_options_and_the_fastest_of_them(run):
    d = _json(run, "step", *BASE, "--seq-len", "8192")
    hint = d["fit_hint"]
    # one option is enough here (ZeRO-3 alone puts the states at 16 x N / 8 = 16.06 GB), so
    # the hint changes one; of the single changes that fit, it is the fastest
    assert len(hint["flags"].split()) == 2
    singles = [("--zero", z) for z in (1, 2, 3)] + [("--recompute", r) for r in
                                                    ("selective", "full")] + \
        [("--cp", c) for c in (2, 4, 8)]
    fitting = []
    for flag, v in singles:
        r = _json(run, "step", *BASE, "--seq-len", "8192", flag, v)
        if r["fits"]:
            fitting.append((r["step_time_s"], f"{flag} {v}"))
    assert ("--zero 3" in [f for _, f in fitting])
    assert hint["flags"] == min(fitting)[1]
    assert hint["step_time_s"] == pytest.approx(min(fitting)[0], rel=1e-9)


def test_a_given_dp_is_rewritten_with_cp(run):
    # at 64K tokens the activations need CP; with --dp 8 given, CP 8 on 8 GPUs leaves DP 1
    # (TP 1 x PP 1 x CP 8 x DP 1 = 8), so the hint says both
    d = _json(run, "step", *BASE, "--seq-len", "65536", "--zero", "3", "--dp", "8")
    flags = d["fit_hint"]["flags"]
    assert "--cp" in flags and "--dp" in flags
    cp = int(flags.split("--cp ")[1].split()[0])
    dp = int(flags.split("--dp ")[1].split()[0])
    assert cp * dp == 8


def test_no_change_of_the_three_fits_says_so(run):
    # Llama 3 70B (70,553,706,496 parameters) at TP 8 on one node: DP 1, so ZeRO shards
    # nothing: 16 x 70.55e9 / 8 = 141.1 GB of states per GPU; recomputation does not touch
    # them and CP cannot double (TP 8 x CP 2 > 8 GPUs)
    assert 16 * 70_553_706_496 / 8 > USABLE
    res = run("memory", "llama-3-70b", "--node", "dgx-h100", "--nodes", "1", "--tp", "8")
    assert res.code == 0
    assert "no change of --zero, --recompute and --cp makes it fit" in res.out
    assert _json(run, "memory", "llama-3-70b", "--node", "dgx-h100", "--nodes", "1",
                 "--tp", "8")["fit_hint"] is None


def test_a_layout_that_fits_has_no_hint(run):
    res = run("step", *BASE, "--seq-len", "8192", "--zero", "3")
    assert res.code == 0 and "fits with" not in res.out and "no change of" not in res.out


def test_a_bare_count_ranks_by_memory_by_hand(run):
    # calibration.md section 2's layout: 70e9 parameters, TP 2 x PP 4 x DP 2 on 2 DGX A100,
    # 70e9 / 8 = 8.75e9 parameters per GPU. ZeRO-1: 4 x 8.75e9 + 12 x 8.75e9 / 2 = 87.5 GB;
    # ZeRO-2: 2 x 8.75e9 + 14 x 8.75e9 / 2 = 78.75 GB; both above 76 GB usable. ZeRO-3:
    # 16 x 8.75e9 / 2 = 70.0 GB fits. No step time for a bare count: the least memory wins,
    # and `plan` (which needs an architecture) is not offered
    args = ("memory", "70e9", "--nodes", "2", "--tp", "2", "--pp", "4", "--dp", "2",
            "--model-states-only")
    d = _json(run, *args)
    assert d["fit_hint"]["flags"] == "--zero 3"
    assert d["fit_hint"]["gpu_memory_bytes"] == pytest.approx(16 * 8.75e9 / 2, rel=1e-9)
    assert d["fit_hint"]["step_time_s"] is None
    out = run(*args).out
    assert "fits with --zero 3" in out and "least memory" in out and "plan" not in out


# ---- the framework rules (they note, they do not raise: each hint is checked against them) --

def test_the_hint_is_a_layout_the_named_framework_runs(run):
    # Megatron-LM's ZeRO-2/3 is Megatron-FSDP, which does not compose with PP (rule MG_FSDP_PP:
    # docs/user-guide/features/megatron_fsdp.md L318 @ d98e8a6). Llama 3 8B at PP 2, 8K tokens,
    # ZeRO-1 under the Megatron-LM profile does not fit; --zero 2 alone would (the rule refuses
    # it), so the hint must be another single change that Megatron-LM runs
    args = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--pp", "2",
            "--seq-len", "8192", "--zero", "1", "--framework", "megatron")
    z2 = _json(run, *args, "--zero", "2")
    assert z2["fits"] is True and z2["frameworks"]["megatron"] != "runs"
    hint = _json(run, *args)["fit_hint"]
    assert hint["framework_runs"] is True and "--zero" not in hint["flags"]
    assert len(hint["flags"].split()) == 2   # still one option
    again = _json(run, *args, *hint["flags"].split())
    assert again["fits"] is True and again["frameworks"]["megatron"] == "runs"
    assert again["step_time_s"] == pytest.approx(hint["step_time_s"], rel=1e-9)


def test_no_cp_for_a_windowed_model_under_megatron(run):
    # Mistral-7B-v0.1: a 4096-token window on all 32 layers; Transformer Engine refuses CP with
    # a window on the p2p ring Megatron-LM runs by default (rule MG_CP_WINDOW: TE @ d0067d0
    # context_parallel.py L5054-5060), so no hint may change --cp
    args = ("step", "mistral-7b", "--node", "dgx-h100", "--nodes", "1", "--seq-len", "32768",
            "--zero", "1", "--global-batch", "64", "--framework", "megatron")
    assert _json(run, *args, "--zero", "2", "--cp", "4")["frameworks"]["megatron"] != "runs"
    hint = _json(run, *args)["fit_hint"]
    assert "--cp" not in hint["flags"]
    again = _json(run, *args, *hint["flags"].split())
    assert again["fits"] is True and again["frameworks"]["megatron"] == "runs"


def test_a_what_if_layout_gets_a_what_if_hint_said_as_such(run):
    # no framework runs the OptimusNIC SmartNIC target, whatever --zero/--recompute/--cp: the
    # user's layout is a what-if, and so is the hint (said in the note and framework_runs)
    args = ("step", "llama-3-70b", "--node", "dgx-h100", "--nodes", "8", "--tp", "8",
            "--offload", "smartnic", "--zero", "1", "--seq-len", "32768")
    d = _json(run, *args)
    assert d["fit_hint"]["framework_runs"] is False
    assert _json(run, *args, *d["fit_hint"]["flags"].split())["fits"] is True
    assert "a what-if, as your layout" in run(*args).out


def test_divisibility_of_a_few_huge_degrees():
    # frameworks/base.not_dividing answers a few values with % (the hint's one layout of CP x TP
    # up to millions of GPUs) and many through its table: both agree with % by hand
    import numpy as np
    from optimus_calc.frameworks.base import dividing_into, not_dividing
    d = np.array([1, 3, 8, 4096, 2 ** 19 * 8])
    # 1,048,576 = 2^20: divisible by 1, 8, 4096 and 2^22 / 2^22 = no (2^22 > 2^20); 3 does not
    assert not_dividing(2 ** 20, d).tolist() == [False, True, False, False, True]
    assert dividing_into(d, 8).tolist() == [False, False, True, True, True]
    many = np.arange(1, 5001)
    assert (not_dividing(4096, many) == (4096 % many != 0)).all()


@pytest.mark.parametrize("model", ["llama-3-8b", "llama-2-7b", "mixtral-8x7b", "gpt-oss-20b",
                                   "llama-3-70b"])
def test_memory_falls_with_recompute_and_cp_the_shortcut_rests_on(cat, model):
    # fit_hint._none_can_fit stops when the most relieving candidates do not fit; that holds
    # only if the worst GPU's memory never rises from recompute none to selective to full, nor
    # when CP doubles at a fixed GPU count (DP halves: ZeRO shards over DP x CP, the same group,
    # while each GPU's activations see S / CP tokens). ZeRO itself is not monotone at DP x CP =
    # 1 (ZeRO-3's gather buffers shard nothing), which is why the shortcut tries every stage.
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Offload, Recompute, Training, ZeroStage
    m = resolve_model(model, cat)
    hw = resolve_hardware(cat, "dgx-h100", 2, None, None, None)

    def gb(tp, pp, cp, zero, rec, seq):
        dp = hw.gpus // (tp * pp * cp)
        lay = fill_layout(hw, tp, pp, dp, cp, ep=1, zero=ZeroStage(zero), offload=Offload.NONE,
                          interleave=1)
        tr = Training(seq_len=seq, global_batch=dp * 4, micro_batch=1, recompute=Recompute(rec))
        return estimate_memory(m, hw, lay, tr, Assumptions()).worst.total_bytes
    checked = 0
    for tp, pp, zero, seq in [(1, 1, 1, 8192), (2, 2, 3, 32768), (8, 2, 0, 8192),
                              (4, 1, 2, 16384)]:
        by_rec = [gb(tp, pp, 1, zero, r, seq) for r in ("none", "selective", "full")]
        assert by_rec[0] >= by_rec[1] >= by_rec[2]
        by_cp = [gb(tp, pp, cp, zero, "none", seq) for cp in (1, 2, 4)
                 if hw.gpus % (tp * pp * cp) == 0]
        assert all(a >= b for a, b in zip(by_cp, by_cp[1:]))
        checked += len(by_cp) > 1
    assert checked >= 3


@pytest.mark.parametrize("cmd", ["step", "memory"])
def test_the_csv_row_carries_the_hint(run, cmd):
    # the same hint as JSON's, its flags as name=value (a cell starting with "-" would be
    # quoted by the CSV-injection rule), empty where the layout fits
    import csv
    import io
    args = (cmd, *BASE, "--seq-len", "8192")
    hint = _json(run, *args)["fit_hint"]
    row = next(csv.DictReader(io.StringIO(run(*args, "--format", "csv").out)))
    flags = hint["flags"].split()
    assert row["fit_hint"] == " ".join(f"{f[2:]}={v}" for f, v in zip(flags[::2], flags[1::2]))
    assert float(row["fit_hint_gpu_memory_bytes"]) == pytest.approx(hint["gpu_memory_bytes"],
                                                                   rel=1e-6)
    fits = next(csv.DictReader(io.StringIO(run(*args, "--zero", "3", "--format", "csv").out)))
    assert fits["fits"] == "TRUE" and fits["fit_hint"] == "" == fits["fit_hint_step_time_s"]


@pytest.mark.parametrize("args", [
    # the hint needs two changes: round one's CP-and-recompute mixes are skipped per ZeRO pick
    # where the strongest of them does not fit
    ("llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--seq-len", "131072"),
    ("llama-3-70b", "--node", "dgx-h200", "--nodes", "64", "--tp", "4", "--seq-len", "512",
     "--micro-batch", "2", "--cp", "2", "--framework", "torchtitan"),
    ("gpt3-175b", "--node", "dgx-h200", "--nodes", "16", "--tp", "2", "--pp", "8",
     "--micro-batch", "2"),
    # a what-if (no framework runs the user's layout: Megatron-LM's interleaving wants at least
    # PP micro-batches): the answer reads whether the rules run any candidate that does not fit
    # (CP raises the micro-batch count), so nothing is skipped and no hint is given (a cold
    # review found the pruned search offering a refused --zero 3 --recompute full here)
    ("gpt-1008b", "--node", "dgx-b200", "--nodes", "64", "--pp", "4", "--zero", "1",
     "--seq-len", "8192", "--micro-batch", "2", "--interleave", "2"),
])
def test_skipping_what_cannot_fit_gives_the_same_hint(run, monkeypatch, args):
    # fit_hint._picks skips the mixes weaker than one measured not to fit; the full product
    # (every candidate measured) must give the same hint, and fewer candidates are measured
    from itertools import product

    from optimus_calc.analyses import fit_hint as fh
    measured = []
    real = fh._measure
    monkeypatch.setattr(fh, "_measure", lambda c, u, memory_only=False: (
        measured.append(memory_only), real(c, u, memory_only))[1])
    pruned = _json(run, "step", *args)["fit_hint"]
    n_pruned = sum(not m for m in measured)
    measured.clear()
    monkeypatch.setattr(fh, "_picks", lambda choices, names, cand_of, prune=True: product(
        *(choices[k] for k in names)))
    full = _json(run, "step", *args)["fit_hint"]
    assert pruned == full
    # no framework runs the user's layout (torchtitan refuses the 70B one too): a what-if,
    # every candidate measured; otherwise fewer
    what_if = "--interleave" in args or "torchtitan" in args
    assert (full is None) == ("--interleave" in args)
    assert (n_pruned == sum(not m for m in measured)) == what_if
    assert n_pruned <= sum(not m for m in measured)
