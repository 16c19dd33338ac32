"""The planner's framework rules read the run's precision: torchtitan trains in bfloat16 or
float32, never fp16 (torchtitan/config/job_config.py L282 at the pinned commit, rule TT_FP16).
The sampled mutation run of 2026-11-26 (docs/hardening.md, "Mutation score") found the search
grid's rules seeing bf16 whatever the precision, unnoticed by every test of its selection."""

from tests_support import cli_json


def test_plan_fp16_with_torchtitan_finds_nothing_and_says_why():
    d = cli_json("plan", "llama-2-7b", "--framework", "torchtitan", "--precision", "fp16")
    assert d["feasible"] == 0 and d["candidates"] == [] and d["recommended"] is None
    fp16 = [text for text in d["framework_rejections"] if "no fp16" in text]
    assert fp16 and "job_config.py L282" in fp16[0]
