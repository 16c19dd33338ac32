"""A card saved by `breakeven --save-card` names the command that derived it, and that command
reproduces the verdict (rev13c). Before, the source dropped the planner's micro-batch (2 here)
and SP choice: re-run as written (micro-batch 1) the saved card left 0.83 s of its 1.78 s
pipeline exposed, "goal not met", on the layout the card claims to hide."""

from __future__ import annotations

import re


def test_saved_card_source_reproduces_goal_met(run, tmp_path):
    cards = tmp_path / "cards"
    cards.mkdir()
    r = run("breakeven", "llama-2-7b", "--device", "bluefield-3", "--save-card",
            cards / "card.toml")
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "micro-batch 2" in text   # the planner's layout for this node and device
    source = re.search(r'^source = "optimus-calc (breakeven [^:"]*):', (cards / "card.toml")
                       .read_text(), re.M).group(1)
    assert "--micro-batch 2" in source and "--no-sp" in source and "--node dgx-a100" in source
    args = source.replace("--device bluefield-3", "--device bluefield-3-min-hide").split()
    again = run("--catalog-dir", cards, *args)
    assert again.code == 0, again.err
    # the card's pipeline (1.78 s) fits the window of the layout it was sized on: 0 s exposed
    assert "0 s exposed" in " ".join(again.out.split()) and "goal met" in again.out
