"""An MFU above 100% says why (two cold reviews: `step ... --assume attention_efficiency=1` at
1M tokens printed MFU 141.8% and TFLOP/s above the A100's peak with no word; a plan on MI300X
gave an MFU range to 109.1%). The un-halved count charges the causal core over the whole
sequence, twice what the kernels execute; the executed count stays below the peak."""

from __future__ import annotations

from optimus_calc.report.common import over_peak_note


def test_the_note_only_past_the_peak():
    assert over_peak_note(0.62, 0.55) == [] and over_peak_note(0.62, 0.55, 0.99) == []
    (note,) = over_peak_note(1.418, 0.727)
    assert note.startswith("MFU above 100% (141.8%): the un-halved count")
    assert note.endswith("it is 72.7%")
    # the range's top: 0.494 x 1.091 / 0.676 = 0.797
    (note,) = over_peak_note(0.676, 0.494, 1.091)
    assert note.startswith("MFU 67.6% with a range above 100% (to 109.1%): the un-halved")
    assert note.endswith("it is 49.4% (range to 79.7%)")


def test_step_says_it_where_attention_dominates(run):
    # Llama-2-7B at 1M tokens, CP 8, full recompute, the kernel at 1.0: attention is nearly all
    # the step, so the un-halved MFU tends to 2 x 1.0 x the 6/8 of full recomputation's passes
    d = run("step", "llama-2-7b", "--seq-len", 1_000_000, "--global-batch", 8, "--cp", 8,
            "--recompute", "full", "--assume", "attention_efficiency=1", "--format",
            "json").json()
    assert d["mfu"] > 1 > d["mfu_causal"]
    notes = " ".join(d["notes"]) if "notes" in d else ""
    text = " ".join(run("step", "llama-2-7b", "--seq-len", 1_000_000, "--global-batch", 8,
                        "--cp", 8, "--recompute", "full", "--assume",
                        "attention_efficiency=1").out.split())
    assert "MFU above 100%" in text and "on the FLOPs executed" in text, notes


def test_a_value_printed_as_100_0_is_not_above_100():
    # 1.0004 prints as 100.0%: "MFU 100.0% with a range above 100% (to 100.0%)" (a cold review)
    assert over_peak_note(0.99, 0.6, 1.0004) == [] and over_peak_note(1.0004, 0.6) == []
    assert over_peak_note(0.99, 0.6, 1.0006) != []
