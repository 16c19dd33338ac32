"""--cuda-graph-impl full_iteration is Megatron-LM's launch flag (review11): DeepSpeed,
Megatron-DeepSpeed and torchtitan ran it silently as eager (their profiles never read it, their
exports dropped it) while step's JSON said "cuda_graph_impl": "full_iteration". Their rules
now refuse it, as a dispatcher they lack: DeepSpeed's only graph switches are graph_harvesting
(short kernel sequences of the BF16 optimizer, runtime/constants.py L264-273 @ edaa722) and
the RLHF hybrid engine's generation; torchtitan v0.2.2 compiles blocks with torch.compile's
default mode (models/llama3/infra/parallelize.py L256-267), no CUDA graph."""

import pytest

LLAMA = ("llama-3-8b", "--node", "dgx-h100", "--cuda-graph-impl", "full_iteration")


def _said(r) -> str:
    return " ".join(r.out.split())


@pytest.mark.parametrize("fw,source", [
    ("deepspeed", "runtime/constants.py L264-273"),
    ("megatron-deepspeed", "runtime/constants.py L264-273"),
    ("torchtitan", "torchtitan/models/llama3/infra/parallelize.py L256-267")])
def test_frameworks_without_an_iteration_graph_refuse_it(run, fw, source):
    text = _said(run("step", *LLAMA, "--framework", fw, "--zero", "3"))
    assert "although its rules reject this layout" in text and source in text
    eager = _said(run("step", *LLAMA[:3], "--framework", fw, "--zero", "3"))
    assert "although its rules reject" not in eager
    # nothing to export: the script would run eager what the plan timed as one graph
    r = run("plan", *LLAMA, "--framework", fw, "--export", fw.removeprefix("megatron-"))
    assert r.code == 2 and r.err.startswith("error: nothing to export")


def test_megatron_runs_it_and_auto_picks_it(run):
    text = _said(run("step", *LLAMA, "--framework", "auto"))
    assert "Megatron-LM profile (--framework auto" in text
    assert "runs on Megatron-LM:" in _said(run("step", *LLAMA))
    plan = run("plan", *LLAMA, "--top", "3", "--format", "json").json()
    assert plan["recommended"]["framework"] == "megatron"
    assert {c["framework"] for c in plan["candidates"]} == {"megatron"}


GRAPH_DROPOUT = ("llama-3-8b", "--node", "dgx-h100", "--framework", "megatron",
                 "--cuda-graph-impl", "full_iteration", "--dropout")


def test_step_and_plan_refuse_what_megatron_refuses(run):
    # Megatron-LM asserts no attention dropout in graphed attention recomputation under a
    # full-iteration graph (transformer_config.py L2874-2884 @ d98e8a6; selective recompute's
    # default module is core_attn, L1940-1941): only the export refused it, so `step` timed it
    # and `plan` recommended TP 8 selective (63.19 s) that its own export then refused
    for cmd in ("step", "plan"):
        r = run(cmd, *GRAPH_DROPOUT, "--recompute", "selective")
        assert r.code == 2 and "L2874-2884" in r.err and "\n" not in r.err.strip(), cmd
    # searched: the plan leaves selective out (none and full are Megatron's to run)
    plan = run("plan", *GRAPH_DROPOUT, "--recompute", "selective,full", "--top", "5",
               "--format", "json").json()
    assert {c["recompute"] for c in plan["candidates"]} == {"full"}
    plan = run("plan", *GRAPH_DROPOUT, "--top", "20", "--format", "json").json()
    assert "selective" not in {c["recompute"] for c in plan["candidates"]}
    # without dropout, selective stays
    ok = run("step", *GRAPH_DROPOUT[:-1], "--recompute", "selective")
    assert ok.code == 0
