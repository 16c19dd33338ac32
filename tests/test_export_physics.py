"""plan --export X plans with X's layouts under X's physics profile (cli/plan_cmd.py): the
layout written is the best one the exported framework runs as the tool times it."""

import json


def test_the_exported_layout_is_the_best_under_the_exported_frameworks_physics(run):
    # plan --export deepspeed searches DeepSpeed's and Megatron-DeepSpeed's layouts under their
    # engine profile (2-byte gradients): the same recommendation as --framework with those two,
    # not Megatron-LM's best layout (timed with Megatron-LM's physics) that DeepSpeed also runs
    cfg = json.loads(run("plan", "llama70b", "--nodes", "2", "--export", "deepspeed").out)
    rec = run("plan", "llama70b", "--nodes", "2", "--framework", "deepspeed,megatron-deepspeed",
              "--format", "json").json()["recommended"]
    assert cfg["zero_optimization"]["stage"] == rec["zero"]
    assert cfg["gradient_accumulation_steps"] * cfg["train_micro_batch_size_per_gpu"] * \
        rec["dp"] == cfg["train_batch_size"]
    assert f"--tensor-model-parallel-size {rec['tp']} " in cfg["_launch"]["command"]
