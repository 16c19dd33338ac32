"""docs/moe.md and the CHANGELOG on why the expert-bias term is 0 under a full-iteration CUDA
graph: Megatron-LM's TEGroupedMLP (experts.py @ d98e8a6) still adds fc2's bias there, in the
cuteDSL fused grouped MLP (``scale_bias``, L623-636) or the graph-safe packed path
(``_apply_packed_bias``, L317-342); the eager path (L357-380) is the one a graph cannot hold."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _text(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())


def test_moe_doc_says_where_the_bias_goes_under_a_graph():
    text = _text("docs/moe.md")
    assert "`scale_bias`, L623-636" in text and "`_apply_packed_bias`, L317-342" in text
    assert "it adds nothing." not in text


def test_changelog_does_not_say_the_graph_drops_the_bias():
    text = _text("CHANGELOG.md")
    assert "which cannot hold it" not in text
    assert "scales fc2's bias inside the fused op" in text
    assert "which the model puts at about half of what ran" not in text
