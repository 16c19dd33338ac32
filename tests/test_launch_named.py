"""plan, compare and sweep name the launch choices their numbers assume (review11):
--moe-dispatcher moves Qwen3-30B-A3B's EP time 3x over two DGX H100 (docs/moe.md) and
--cuda-graph-impl full_iteration removes the MoE host time, but only `step`'s JSON named them
(review10); the plan's "assumed", compare's JSON and every CSV did not. Where they are the
defaults nothing is added (report/common.launch_data)."""

import csv
import io

QWEN = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "16", "--tp", "1",
        "--pp", "1", "--framework", "megatron")
LAUNCH = ("--moe-dispatcher", "hybridep", "--cuda-graph-impl", "full_iteration")
NAMED = {"moe_dispatcher": "hybridep", "cuda_graph_impl": "full_iteration"}


def _csv(text: str) -> dict:
    return next(csv.DictReader(io.StringIO(text)))


def test_plan_names_them(run):
    data = run("plan", *QWEN, *LAUNCH, "--top", "1", "--format", "json").json()
    assert {k: data["assumed"].get(k) for k in NAMED} == NAMED
    row = _csv(run("plan", *QWEN, *LAUNCH, "--top", "1", "--format", "csv").out)
    assert {k: row[k] for k in NAMED} == NAMED
    text = " ".join(run("plan", *QWEN, *LAUNCH, "--top", "1").out.split())
    assert "dropout off, --moe-dispatcher hybridep, --cuda-graph-impl full_iteration," in text
    # the defaults: nothing added
    plain = run("plan", *QWEN, "--top", "1", "--format", "json").json()["assumed"]
    assert not set(NAMED) & set(plain)


def test_compare_and_step_csv_name_them(run):
    data = run("compare", *QWEN, *LAUNCH, "--format", "json").json()
    assert {k: data.get(k) for k in NAMED} == NAMED
    for cmd in ("compare", "step"):
        row = _csv(run(cmd, *QWEN, *LAUNCH, "--format", "csv").out)
        assert {k: row[k] for k in NAMED} == NAMED, cmd
    text = " ".join(run("compare", *QWEN, "--moe-dispatcher", "deepep").out.split())
    assert "dropout off, --moe-dispatcher deepep" in text


def test_sweep_names_them_in_every_row(run):
    args = ("sweep", "--models", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2",
            "--framework", "megatron", *LAUNCH)
    assert {k: run(*args, "--format", "json").json()["rows"][0][k] for k in NAMED} == NAMED
    row = _csv(run(*args, "--format", "csv").out)
    assert {k: row[k] for k in NAMED} == NAMED
    assert "launch: --moe-dispatcher hybridep, --cuda-graph-impl full_iteration" in \
        " ".join(run(*args).out.split())
