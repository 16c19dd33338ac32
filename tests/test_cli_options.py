"""One option stack for every command, and field errors named by field in the core and by
flag in the CLI (cli/flags.py)."""

import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.specs.training import Layout, Offload, Training


# ---- one option stack -------------------------------------------------------------------------

def test_plan_takes_every_shared_training_option(run):
    r = run("plan", "llama-2-7b", "--node", "dgx-a100", "--nodes", "1", "--gpus-per-node", "8",
            "--seq-len", "2048", "--global-batch", "64", "--precision", "bf16",
            "--optimizer", "adamw", "--grad-bytes", "4", "--no-flash-attn", "--no-dropout",
            "--multicast", "--assume", "gemm_efficiency=0.5", "--objective", "memory",
            "--top", "3", "--max-zero", "1", "--offloads", "none,cpu", "--recompute", "full",
            "--distinct", "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["objective"] == "memory" and d["assumed"]["optimizer"] == "adamw"
    assert d["assumed"]["seq_len"] == 2048 and d["assumed"]["global_batch"] == 64
    assert d["assumed"]["assumptions"]["gemm_efficiency"] == 0.5
    cands = d["candidates"]
    assert 1 <= len(cands) <= 3
    assert all(c["zero"] <= 1 and c["offload"] in ("none", "cpu") and c["recompute"] == "full"
               for c in cands)
    assert len({(c["tp"], c["pp"]) for c in cands}) == len(cands)  # --distinct


def test_plan_global_batch_default_is_the_batch_rule(run):
    # every layout takes the smallest multiple of its dp x micro-batch holding 512 sequences
    d = run("plan", "llama-2-7b", "--nodes", "2", "--seq-len", "2048", "--format", "json").json()
    from optimus_calc.evaluate.batch import rule_global_batch
    for c in d["candidates"]:
        assert c["global_batch"] == rule_global_batch(c["dp"], c["micro_batch"])
    assert int(rule_global_batch(25, 1)) == 525 and int(rule_global_batch(1024, 1)) == 1024
    assert int(rule_global_batch(6, 4)) == 528  # 22 x 24


# ---- field errors: named by field in the core, by flag in the CLI ----------------------------

def test_field_error_names_the_field_in_the_core_and_the_flag_in_the_cli(run, cat):
    from optimus_calc.cli.flags import flag, message
    from optimus_calc.errors import FieldError, InputError
    from optimus_calc.search.inputs import check_offloads
    hw = resolve_hardware(cat, "dgx-a100", 1)
    with pytest.raises(FieldError) as exc:
        check_offloads(hw, (Offload.SMARTNIC,))
    e = exc.value
    assert isinstance(e, InputError) and e.field == "offloads"
    assert str(e) == ("offloads smartnic: dgx-a100 does not offer it (offers none, cpu, nvme) "
                      "(name a card with smartnic for the what-if)")
    assert message(e) == ("--offloads smartnic: dgx-a100 does not offer it (offers none, cpu, "
                          "nvme) (name a card with --smartnic for the what-if)")
    assert [flag(f) for f in ("tp", "micro_batch", "mb", "v", "global_batch")] == [
        "--tp", "--micro-batch", "--micro-batch", "--interleave", "--global-batch"]
    # the same error through the command line: exit 2, one line, the flags
    r = run("plan", "llama-2-7b", "--offloads", "smartnic")
    assert r.code == 2 and r.out == "" and r.err == f"error: {message(e)}\n"
    # the planner's pinned columns by their flags (tp 3 divides no head count of 32)
    r = run("plan", "llama-2-7b", "--tp", "3", "--micro-batch", "5", "--interleave", "2")
    assert r.code == 2 and r.err == (
        "error: no layout of llama-2-7b divides 8 GPUs with the default global batch and --tp 3 "
        "--micro-batch 5 --interleave 2 (TP must divide the heads and the node's GPUs; a "
        "micro-batch must divide the global batch / DP; without --global-batch the planner's "
        "batch is the smallest multiple of DP holding 512 sequences: give --global-batch to run "
        "a larger micro-batch; interleave > 1 needs PP > 1, PP x "
        "interleave <= 34 (32 layers, the embedding and the loss) and the micro-batches a "
        "multiple of PP)\n")


def test_layout_errors_carry_their_field(cat):
    from optimus_calc.cli.flags import message
    from optimus_calc.errors import FieldError
    from optimus_calc.evaluate.context import check_layout, fill_layout
    m = cat.get("llama70b", "model")   # 64 heads, 8 KV heads, 80 layers
    hw = resolve_hardware(cat, "dgx-a100", 1)
    tr = Training(seq_len=8192, global_batch=512)
    cases = [(lambda: check_layout(m, Layout(tp=3, dp=1), tr), "tp",
              "{} 3 does not divide the 64 attention heads of llama-3-70b", ["--tp"]),
             (lambda: check_layout(m, Layout(tp=8, dp=1, cp=3), tr), "cp",
              "{} 3 does not divide {} 8192", ["--cp", "--seq-len"]),
             (lambda: check_layout(m, Layout(tp=8, dp=1), tr.model_copy(
                 update={"global_batch": 7, "micro_batch": 2})), "global_batch",
              "{} 7 is not a multiple of {} 1 x {} 2 = 2",
              ["--global-batch", "--dp", "--micro-batch"]),
             (lambda: fill_layout(hw, 3, 1, None, 1), "tp",
              "{} 3 x {} 1 x {} 1 = 3 does not divide the 8 GPUs (1 x 8)",
              ["--tp", "--pp", "--cp"])]
    for call, field, text, flags in cases:
        with pytest.raises(FieldError) as exc:
            call()
        assert exc.value.field == field
        assert str(exc.value) == text.format(*(f.removeprefix("--").replace("-", "_")
                                               for f in flags))
        assert message(exc.value) == text.format(*flags)
