"""`step`'s note on an MoE model's routing: the imbalance it runs at (capped at what the
layout's routing can reach: report.common.imbalance_note), the expert GEMMs' launches and the
token dispatcher."""

from __future__ import annotations

from optimus_calc.report.common import imbalance_applied, imbalance_note

_DISPATCH = {"alltoall": "NCCL's all-to-all (comm.pairwise_cross_share)",
             "deepep": "DeepEP, a token across the network once per node "
                       "(comm.dedup_cross_share)",
             "hybridep": "HybridEP, timed as DeepEP (comm.dedup_cross_share)"}


def moe_notes(model, asm, tr=None, reach=None, layout=None) -> list[str]:
    """For an MoE model: the routing the expert time assumes (--moe-imbalance, balanced by
    default), how many expert GEMMs run concurrently, sharing one fixed cost, and the token
    dispatcher the all-to-all is timed with (--moe-dispatcher); ``reach``, the layout's
    (nodes a token's experts reach at most, the EP group's nodes): topology.ep_reach; ``layout``,
    the imbalance as capped at its EP, and the note where it caps."""
    if not getattr(model, "is_moe", False):
        return []
    disp = "" if tr is None else (f"; tokens dispatched by {_DISPATCH[tr.moe_dispatcher.value]}"
                                  f" (--moe-dispatcher {tr.moe_dispatcher.value})")
    from optimus_calc.evaluate.context import node_limited
    if tr is not None and node_limited(asm):
        disp += (f"; each token's experts on at most {asm.moe_max_nodes:g} "
                 f"{'node' if asm.moe_max_nodes == 1 else 'nodes'} "
                 + ("(comm.node_limited_cross_share where the EP group spans more)"
                    if tr.moe_dispatcher.dedups_nodes else
                    "(moe_max_nodes: NCCL's all-to-all sends every copy, so no change)"))
    if tr is not None and tr.moe_dispatcher.dedups_nodes and model.router_groups > 1:
        where = ("" if not reach or reach[1] <= 1 else
                 f": at most {reach[0]} of the EP group's {reach[1]} nodes" if reach[0] < reach[1]
                 else f": they can span all {reach[1]} of the EP group's nodes here, no limit")
        disp += (f"; the model routes a token to {model.router_group_topk} of its "
                 f"{model.router_groups} expert groups{where} (comm.routing_node_limit)")
    iota = imbalance_applied(model, asm, layout)  # as capped at the layout's EP
    route = ("balanced routing (--moe-imbalance 1.0, the default)" if asm.moe_imbalance == 1
             else "balanced routing at this EP" if iota == 1
             else f"the most-loaded expert-parallel rank at {iota:g}x its balanced "
                  "tokens (--moe-imbalance): its expert GEMMs and all-to-all set the pace, its "
                  "routed experts' activations the memory")
    launch = (f"the local experts' GEMMs {asm.moe_expert_gemm_streams:g} at a time "
              "(moe_expert_gemm_streams)")
    return [f"MoE: {route}; {launch} (`optimus-calc explain efficiency.expert_launch_flops`)"
            + disp] + imbalance_note(model, asm, layout)
