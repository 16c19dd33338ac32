"""Defects found by reading round 9's change cold (branch review9): each test pins the
corrected behaviour."""

from __future__ import annotations

from optimus_calc.evaluate.shapes import virtual_stage_layers


def test_torchtitan_refuses_an_interleave_with_a_chunk_holding_nothing(run):
    # PP x interleave may now reach layers + 2 (evaluate/context.check_layout). llama-3-8b has 32
    # layers; PP 2 x VP 17 = 34 chunks: split_layers(32, 2) = 16 + 16, each cut into 17 chunks
    # = 0 + 16 x 1, so virtual stage 0 (rank 0) holds only the embedding and virtual stage 1
    # (rank 1) nothing at all. torchtitan v0.2.2 builds that model part with no parameters
    # (distributed/pipeline_parallel.py L390-431: layers emptied, the other modules None) and
    # OptimizersContainer gives each part its own optimizer (components/optimizer.py L80-81),
    # which torch.optim refuses ("optimizer got an empty parameter list"). The step said
    # "runs on Megatron-LM, torchtitan" and the export wrote module_fqns_per_model_part with [].
    assert virtual_stage_layers(32, 2, 17)[:3] == [0, 0, 1]
    args = ("llama-3-8b", "--node", "dgx-h100", "--pp", "2", "--tp", "2", "--dp", "2",
            "--interleave", "17", "--zero", "1", "--framework", "torchtitan")
    d = run("step", *args, "--format", "json").json()
    assert d["frameworks"]["megatron"] == "runs"  # Megatron's one optimizer spans its chunks
    assert d["frameworks"]["torchtitan"].startswith("torchtitan: interleaving leaves a model "
                                                    "part with no parameters")
    r = run("plan", "llama-3-8b", "--node", "dgx-h100", "--pp", "2", "--interleave", "17",
            "--offloads", "none", "--framework", "torchtitan", "--export", "torchtitan")
    assert r.code == 2 and "module_fqns_per_model_part" not in r.out
    # PP 3 x VP 11 = 33 = layers + 1: only rank 0's first chunk is empty, and it holds the
    # embedding (tok_embeddings has parameters): torchtitan runs it
    assert virtual_stage_layers(32, 3, 11).count(0) == 1
    one = run("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "3", "--gpus-per-node", "1",
              "--pp", "3", "--interleave", "11", "--zero", "0", "--framework", "torchtitan",
              "--format", "json").json()
    assert one["frameworks"]["torchtitan"] == "runs"
