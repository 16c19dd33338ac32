"""Where each framework runs --moe-dispatcher deepep, read from its own source (review10):
a layout the framework refuses, or runs with another dispatcher than the one the step timed,
is refused by a rule, so neither the step nor the export claims it."""

QWEN1 = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "1", "--pp", "1",
         "--micro-batch", "1", "--global-batch", "64", "--seq-len", "4096", "--zero", "1")
REJECT = "although its rules reject"


def _said(r) -> str:
    return " ".join(r.out.split())


def test_megatron_deepep_needs_more_than_one_rank(run):
    # MoEFlexTokenDispatcher: 'assert self.tp_size * self.ep_size > 1, "DeepEP dispatcher
    # requires TPxEP > 1"' (megatron/core/transformer/moe/token_dispatcher.py L1836 @ d98e8a6;
    # tp_size is the expert TP group's, L86-89): EP 1 with ETP 1 builds no DeepEP dispatcher
    meg = ("--framework", "megatron")
    r = run(*QWEN1, "--ep", "1", "--tp", "1", *meg, "--moe-dispatcher", "deepep")
    assert REJECT in _said(r) and "token_dispatcher.py L1836" in _said(r)
    # ETP x EP = 2 builds it (TP 2, ETP = TP), and so do EP 8 and HybridEP at EP 1 (the
    # HybridEP branch has no such assertion, L1845-1851)
    for args in (("--ep", "1", "--tp", "2"), ("--ep", "8", "--tp", "1")):
        assert REJECT not in _said(run(*QWEN1, *args, *meg, "--moe-dispatcher", "deepep"))
    assert REJECT not in _said(run(*QWEN1, "--ep", "1", "--tp", "1", *meg,
                                   "--moe-dispatcher", "hybridep"))
    # the export refuses what Megatron would refuse
    r = run("plan", *QWEN1[1:], "--ep", "1", "--tp", "1", *meg, "--moe-dispatcher", "deepep",
            "--export", "megatron", "-o", "/dev/null")
    assert r.code == 2
