"""Defects found by reading round 9's change cold (branch review9): each test pins the
corrected behaviour."""

from __future__ import annotations

import pytest

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


def test_torchtitan_runs_the_embedding_and_loss_split_at_layers_plus_two(run):
    # round 19's split counts the embedding and the loss as a layer where layers + 2 divides PP
    # (shapes.embedding_and_loss_split): 126 + 2 = 128 = 16 x 8 chunks of one, the first
    # holding only tok_embeddings and the last only norm and output, as torchtitan's own
    # default (layers per stage 1, first/last stage less layers 1) builds them: every model
    # part has parameters, so TT_EMPTY_PART no longer refuses it (found by a cold review)
    assert virtual_stage_layers(126, 16, 8)[0] == virtual_stage_layers(126, 16, 8)[-1] == 0
    assert virtual_stage_layers(126, 16, 8).count(0) == 2
    d = run("step", "llama-3-405b", "--node", "dgx-h100", "--nodes", "32", "--tp", "8", "--pp",
            "16", "--interleave", "8", "--zero", "1", "--recompute", "full", "--framework",
            "torchtitan", "--format", "json").json()
    assert d["frameworks"]["torchtitan"] == "runs"


@pytest.mark.parametrize("pin, rule", [
    # llama-3-8b on one DGX H100: PP <= 8 GPUs, so PP x 40 >= 80 > 32 layers + 2 everywhere
    (("--interleave", "40"), "interleave > 1 needs PP > 1, PP x interleave <= 34 (32 layers, "
                             "the embedding and the loss)"),
    # 3 divides neither the 8,192-token sequence nor the 8 GPUs
    (("--cp", "3"), "CP must divide the sequence and the GPUs left by TP"),
])
def test_no_space_hint_names_the_pinned_cp_and_interleave_rules(run, pin, rule):
    # this round searches a pinned --cp at any sequence and a pinned --interleave unevenly;
    # when such a pin leaves no layout, the hint said only "TP must divide the heads and the
    # node's GPUs", which both pins here satisfy at TP 1
    r = run("plan", "llama-3-8b", "--node", "dgx-h100", *pin)
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith(f"error: no layout of llama-3-8b divides 8 GPUs with the default "
                            f"global batch and {' '.join(pin)} (")
    assert rule in r.err


@pytest.mark.parametrize("per_node, nodes, rng", [
    # 16 x 2,048 = 32,768 H100, twice the largest public run (16,384): the band was the node
    # count's (">16 nodes", 21 H100 cases) and the range "public"
    (16, 2048, "widened"),
    # 4 x 4,096 = 16,384 H100, the Llama 3 paper's own size: the band was ">2048 nodes", no case
    (4, 4096, "public"),
])
def test_past_the_largest_public_run_counts_gpus_not_nodes(run, per_node, nodes, rng):
    d = run("step", "llama70b", "--node", "dgx-h100", "--gpus-per-node", per_node, "--nodes",
            nodes, "--tp", 4, "--format", "json").json()
    assert d["error_range"] == rng
    assert (">16384 GPUs" in d["error_range_basis"]) == (rng == "widened")


def test_cp_needs_the_sequence_in_2cp_chunks(run):
    # a pinned --cp is now searched at any sequence. Megatron-LM asserts seq_length % (2 x CP)
    # == 0 (training/arguments.py L1335-1338 @ d98e8a6): 4,100 % 8 = 4. torchtitan asserts
    # seq_len % (TP x 2 x CP) == 0 (models/llama3/infra/parallelize.py L69-74 @ v0.2.2):
    # 4,100 % 16 = 4. Both said "runs", and plan --export megatron wrote --context-parallel-size
    # 4 --seq-length 4100
    base = ("llama-3-8b", "--node", "dgx-h100", "--global-batch", "64")
    d = run("step", *base, "--cp", 4, "--tp", 2, "--seq-len", 4100, "--format", "json").json()
    assert d["frameworks"]["megatron"].startswith("Megatron-LM: context parallelism cuts the "
                                                  "sequence into 2 x CP chunks")
    assert d["frameworks"]["torchtitan"].startswith("torchtitan: the sequence must be a "
                                                    "multiple of TP x 2 x CP")
    r = run("plan", *base, "--cp", 4, "--seq-len", 4100, "--offloads", "none", "--framework",
            "megatron", "--export", "megatron")
    assert r.code == 2 and "--context-parallel-size" not in r.out
    # 4,104 = 8 x 513: a multiple of 2 x CP 4 (Megatron runs it), not of TP 2 x 2 x 4 = 16
    ok = run("step", *base, "--cp", 4, "--tp", 2, "--seq-len", 4104, "--format", "json").json()
    assert ok["frameworks"]["megatron"] == "runs"
    assert ok["frameworks"]["torchtitan"].startswith("torchtitan: the sequence must be")


def test_nemo_2412_rows_say_the_2407_table_publishes_their_batch():
    # NeMo 24.07's table (docs/source/performance/performance_summary.md @ 8e3d65dcfe):
    # | LLAMA2-70B | 64 | 128 | 1 | 4096 | 4 | 4 | 1 | 20 | 1728 | ...
    # | LLAMA3-8B  | 8  | 128 | 1 | 8192 | 1 | 1 | 2 | 1  | 12273 | ...
    # | LLAMA3-70B | 64 | 128 | 1 | 8192 | 4 | 4 | 2 | 5  | 1524 | ...
    # the 24.12 rows of these figures said "global batch 128, micro-batch 1 (not published)"
    from optimus_calc.public_cases import public_rows
    rows = {r.published: r for r in public_rows() if r.source.startswith("NeMo 24.12")}
    for tps in (1728, 12273, 1524):
        r = rows[tps]
        assert (r.gbs, r.mbs) == (128, 1) and "not published" not in r.assumed
        assert "as NeMo's 24.07 table of the same figure publishes" in r.assumed
