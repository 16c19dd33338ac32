"""A CSV column's decimals follow its unit when a qualifier follows it (docs/guide/outputs.md:
seconds 9, rates, percentages and days 3): `step_time_s_low`, `tokens_per_s_high`,
`mfu_pct_low`, `train_days_high` and nics' `optimizer_s_one_card` had 6 (a cold review)."""

from __future__ import annotations

import csv
import io

from optimus_calc.report.formats import float_decimals


def test_the_unit_before_the_qualifier_sets_the_decimals():
    assert [float_decimals(k) for k in ("step_time_s_low", "step_time_s_high",
                                        "optimizer_s_one_card", "tokens_per_s_low",
                                        "mfu_pct_high", "train_days_low", "step_time_s",
                                        "ratio", "tflops_per_gpu_high")] == [9, 9, 9, 3, 3, 3, 9,
                                                                              6, 3]


def test_a_plan_csv_row(run):
    r = run("plan", "llama70b", "--nodes", 2, "--tokens", "1T", "--format", "csv")
    row = next(csv.DictReader(io.StringIO(r.out)))
    decimals = {k: len(v.split(".")[1]) for k, v in row.items() if "." in v and k.endswith(
        ("_low", "_high"))}
    assert decimals["step_time_s_low"] == 9 and decimals["tokens_per_s_high"] == 3
    assert decimals["mfu_pct_low"] == 3 and decimals["train_days_high"] == 3
