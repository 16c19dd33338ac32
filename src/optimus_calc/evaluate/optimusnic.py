"""OptimusNIC's optimizer step as a per-layer pipeline (equations/optimusnic.py): the stages'
times and what the overlap window leaves exposed, over arrays (one element per layout, pipeline
stage, card type or card count; they broadcast).

:func:`exposed` is the evaluator's call for a SmartNIC layout; :func:`pipeline` is the same
physics with every input explicit, used by the NIC sizing (analyses/nics.py) and `breakeven`
to try many cards in one batch.
"""

from __future__ import annotations


import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.optimizer import Impl, bytes_per_param, device_from, device_time
from optimus_calc.evaluate.optimizer import flops_per_param
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training
from optimus_calc.record import record

STAGES = ("gradient in", "update", "weights out")


@record
class Pipeline:
    """Seconds per stage over the step's layers, the pipeline time, the window and what is
    exposed (arrays)."""

    gradient_in_s: np.ndarray
    update_s: np.ndarray
    weights_out_s: np.ndarray
    pipeline_s: np.ndarray
    window_s: np.ndarray
    exposed_s: np.ndarray

    @property
    def slowest(self) -> np.ndarray:
        """Index into STAGES of the slowest stage."""
        return np.argmax(np.stack(np.broadcast_arrays(self.gradient_in_s, self.update_s,
                                                      self.weights_out_s)), axis=0)

    @property
    def margin_s(self) -> np.ndarray:
        """Window minus pipeline time (negative: exposed by that much)."""
        return self.window_s - self.pipeline_s



def pipeline(*, shard_params, gpus_per_card, spill_bytes, update_s, layers, window_s,
             gpu_link_Bps, card_link_Bps, grad_bytes, weight_bytes) -> Pipeline:
    """The card's pipeline for ``shard_params`` optimizer parameters per GPU, each card serving
    ``gpus_per_card`` GPUs with ``spill_bytes`` of their state in host RAM and updating them in
    ``update_s`` (its roofline); links as achievable bytes/s per direction. The equations are
    called through the recording wrapper, so `explain` sees them."""
    links = dict(B_cl=card_link_Bps, B_gl=gpu_link_Bps, P_o=shard_params, S_sp=spill_bytes,
                 n_gc=gpus_per_card)
    t_in = eq.optimusnic__gradient_in_time(b_gr=grad_bytes, **links)
    t_out = eq.optimusnic__weights_out_time(b_wt=weight_bytes, **links)
    n_l = np.maximum(np.asarray(layers, dtype=np.float64), 1.0)
    t_pipe = eq.optimusnic__pipeline_time(T_in=t_in, T_out=t_out, T_up=update_s, n_L=n_l)
    t_x = eq.optimusnic__exposed_time(T_pipe=t_pipe,
                W_o=window_s)
    return Pipeline(np.asarray(t_in), np.asarray(update_s), np.asarray(t_out),
                    np.asarray(t_pipe), np.asarray(window_s), np.asarray(t_x))


def card_update_time(card, params_per_card, tr: Training, asm: Assumptions):
    """The card's optimizer roofline (compute.optimizer_step_time) over ``params_per_card``."""
    t, _ = device_time(device_from(card, 1, asm), params_per_card,
                       bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes),
                       flops_per_param(tr.optimizer), tr.optimizer_bytes)
    return t


def card_pipeline(hw, tr: Training, asm: Assumptions, *, shard_params, cards_per_node,
                  spill_bytes, window_s, layers, update=None) -> Pipeline:
    """The pipeline of ``hw``'s SmartNIC with ``cards_per_node`` cards per node. ``update``:
    (parameters per card, :func:`card_update_time` of them) the caller has already computed;
    used where those parameters equal this pipeline's, element by element (the same roofline
    on the same numbers: a speed tactic, not while `explain` records)."""
    gpn = hw.gpus_per_node
    gpus_per_card = gpn / np.asarray(cards_per_node, dtype=np.float64)
    gl, cl = hw.gpu_host_link, hw.smartnic_host_link
    per_card = shard_params * gpus_per_card
    if update is not None and not recording_active() and np.shape(update[0]) == per_card.shape \
            and (update[0] == per_card).all():
        update_s = update[1]
    else:
        update_s = card_update_time(hw.smartnic, per_card, tr, asm)
    return pipeline(
        shard_params=shard_params, gpus_per_card=gpus_per_card, spill_bytes=spill_bytes,
        update_s=update_s,
        layers=layers, window_s=window_s, gpu_link_Bps=gl.bandwidth_Bps * gl.efficiency,
        card_link_Bps=cl.bandwidth_Bps * cl.efficiency, grad_bytes=tr.gradient_bytes,
        weight_bytes=tr.weight_bytes)


def exposed(hw, tr: Training, asm: Assumptions, *, shard_params, cards_per_node, spill_bytes,
            window_s, layers, update=None):
    """Seconds of the OptimusNIC step left on the critical path (the evaluator's call)."""
    return card_pipeline(hw, tr, asm, shard_params=shard_params, cards_per_node=cards_per_node,
                         spill_bytes=spill_bytes, window_s=window_s, layers=layers,
                         update=update).exposed_s
