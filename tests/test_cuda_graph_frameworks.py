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
