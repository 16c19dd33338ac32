"""NIC sizing (`nics`, the planner's SmartNIC table): for each SmartNIC type, the cards per GPU
to hold each GPU's optimizer shard and to hide its step.

One evaluation of the layout (optimizer on the GPU and on a card, the pipeline stages that can
bind) gives
the GPU memory before and after, each stage's shard, layers and window; the cards' OptimusNIC
pipeline (evaluate/optimusnic.py, the evaluator's own exposure) then runs for every card type x
card count x stage as one array. The fewest cards per GPU whose pipeline fits every stage's
window is the compute need.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from optimus_calc.catalog import Catalog
from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import evaluate_window, usable_gpu_bytes
from optimus_calc.evaluate.strategies.smartnic import SMARTNIC
from optimus_calc.evaluate.optimusnic import card_update_time, pipeline
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training, offload_code
from optimus_calc.record import record

MAX_CARDS_PER_GPU = 16  # card counts tried per GPU


@record
class NicSizing:
    smartnic: str
    memory_bytes: float
    optimizer_bytes_per_gpu: float
    nics_per_gpu_for_memory: int
    host_spill_bytes_per_nic: float       # with one card per GPU
    nics_per_gpu_for_compute: int | None  # None: the step cannot be hidden
    optimizer_s_one_card: float
    window_s: float
    recommended_nics_per_node: int | None
    gpu_bytes_without_offload: float
    gpu_bytes_with_offload: float
    gpu_usable_bytes: float               # the GPU's memory less the headroom (engine)
    pipeline_s_one_card: float = 0.0      # the card's pipeline (optimusnic.pipeline_time)

    @property
    def gpu_fits_with_offload(self) -> bool:
        """Whether the GPU holds what stays on it once the state is on the cards."""
        return self.gpu_bytes_with_offload <= self.gpu_usable_bytes

    def nics_for_memory(self, gpus: int) -> int:
        """Cards in a cluster of ``gpus`` GPUs to hold every GPU's optimizer shard."""
        return self.nics_per_gpu_for_memory * gpus

    def nics_for_compute(self, gpus: int) -> int | None:
        """Cards in the cluster to hide the optimizer step (None: it cannot be hidden)."""
        if self.nics_per_gpu_for_compute is None:
            return None
        return self.nics_per_gpu_for_compute * gpus

    def nics_per_node(self, gpus_per_node: int) -> int:
        """Cards per node: the recommendation, or the memory need where no step time exists."""
        if self.recommended_nics_per_node is not None:
            return self.recommended_nics_per_node
        return self.nics_per_gpu_for_memory * gpus_per_node


def _with_card(hw: Hardware, cat: Catalog, sn) -> Hardware:
    return dataclasses.replace(hw, smartnic=sn, smartnic_implicit=False,
                               smartnic_host_link=cat.get(sn.host_link, "link"))


def _pipelines(cat, cards, hw_sn, ev, window, layout: Layout, tr: Training, asm: Assumptions):
    """(pipeline time, exposed) per card type x cards per GPU x stage, for the SmartNIC row."""
    gpn = hw_sn.gpus_per_node
    row = lambda x: np.atleast_2d(np.asarray(x, dtype=np.float64))[-1]  # noqa: E731  (S,)
    P, layers = row(ev.params_stage), row(ev.stage_layers)
    window = row(np.broadcast_to(window, np.shape(ev.params_stage)))
    z = int(layout.zero)
    # the evaluator's shard degree (memory.zero_shard_degree: DP x CP, experts over DP x CP / EP)
    n_sh = row(np.broadcast_to(np.asarray(ev.shard_degree_stage, dtype=np.float64),
                               np.shape(ev.params_stage)))
    shard = P / (n_sh if z >= 1 else 1)
    opt_gpu = eq.memory__optimizer_offloaded_bytes(N_d=n_sh, P=P, Z=z,
                                                   b_o=tr.optimizer_bytes, f_k=0.0, o_o=1.0)
    k = np.arange(1, MAX_CARDS_PER_GPU + 1, dtype=np.float64)[:, None]   # (K, 1)
    per_card = eq.memory__bytes_per_offload_device(B_gpu=opt_gpu, G_n=gpn, K_n=k * gpn)
    caps = np.array([sn.memory_bytes for sn in cards])[:, None, None]   # (T, 1, 1)
    links = [cat.get(sn.host_link, "link") for sn in cards]
    card_Bps = np.array([ln.bandwidth_Bps * ln.efficiency for ln in links])[:, None, None]
    update = np.stack([card_update_time(sn, shard / k, tr, asm) for sn in cards])  # (T, K, S)
    gl = hw_sn.gpu_host_link
    pipe = pipeline(shard_params=shard, gpus_per_card=1.0 / k,
                    spill_bytes=eq.memory__spill_bytes(B_dev=per_card, C=caps),
                    update_s=update, layers=layers, window_s=window,
                    gpu_link_Bps=gl.bandwidth_Bps * gl.efficiency, card_link_Bps=card_Bps,
                    grad_bytes=tr.gradient_bytes, weight_bytes=tr.weight_bytes)
    return pipe, update, float(window.max())


def size_nics(cat: Catalog, model, hw: Hardware, layout: Layout, tr: Training,
              asm: Assumptions, only: str | None = None) -> list[NicSizing]:
    """For each SmartNIC type (or only the catalog entry named ``only``): cards per GPU to hold
    the optimizer shard and to hide its step, all types and counts in one array."""
    wanted = cat.get(only, "smartnic", what="SmartNIC").name if only else None
    cards = [sn for sn in cat.all("smartnic") if wanted is None or sn.name == wanted]
    if not cards:
        return []
    hw_sn = _with_card(hw, cat, cards[0])
    lay = layout.model_copy(update={"offload": Offload.SMARTNIC, "smartnic": cards[0].name,
                                    "smartnics_per_node": 0})
    batch = dataclasses.replace(Batch.of(lay, tr), offload=np.array([offload_code(Offload.NONE),
                                                           offload_code(Offload.SMARTNIC)]))
    # the stages that can bind only (evaluate/stages.py): a dropped stage repeats a kept one's
    # shape, so its shard, layers, window and card pipeline too (tests/test_pruning.py); of the
    # step only the SmartNIC's overlap window is needed (compute and the exposed DP time)
    ev, window_s = evaluate_window(batch, model, hw_sn, tr, asm, SMARTNIC.window_of,
                                   comm=True)
    gpu_bytes = np.asarray(ev.gpu_bytes, dtype=np.float64).reshape(-1)
    usable = usable_gpu_bytes(hw, asm)
    opt = float(np.asarray(ev.offload_bytes_per_gpu).reshape(-1)[1])
    pipe = update = None
    window = 0.0
    if window_s is not None:
        pipe, update, window = _pipelines(cat, cards, hw_sn, ev, window_s, layout, tr, asm)
        hidden = np.all(np.asarray(pipe.exposed_s) <= 0, axis=-1)          # (T, K)
        t_pipe = np.asarray(pipe.pipeline_s).max(axis=-1)                 # (T, K)
    out = []
    for i, sn in enumerate(cards):
        k_mem = max(1, math.ceil(opt / sn.memory_bytes)) if opt > 0 else 0
        k_cmp, t_one, p_one = None, 0.0, 0.0
        if pipe is not None:
            ok = np.flatnonzero(hidden[i])
            k_cmp = int(ok[0]) + 1 if ok.size else None
            t_one, p_one = float(update[i, 0].max()), float(t_pipe[i, 0])
        else:
            t_one = float(card_update_time(sn, opt / max(tr.optimizer_bytes, 1), tr, asm))
        rec = max(k_mem, k_cmp) * hw.gpus_per_node if k_cmp is not None else None
        out.append(NicSizing(sn.name, sn.memory_bytes, opt, k_mem,
                             max(0.0, opt - sn.memory_bytes), k_cmp, t_one, window, rec,
                             float(gpu_bytes[0]), float(gpu_bytes[1]), usable, p_one))
    return out


def with_nic_sizing(cat, si, res):
    """``res`` (a PlanResult) with every SmartNIC type sized for its recommended layout, under
    the physics its row was timed with (its framework's training and assumptions together:
    search/plan.recommended_inputs; the neutral assumptions with the profile's training before)."""
    from dataclasses import replace
    from optimus_calc.search.plan import recommended_inputs
    if res.recommended is None:
        return res
    inp = recommended_inputs(res, si)
    return replace(res, nic_sizing=tuple(size_nics(cat, si.model, si.hw, inp.layout,
                                                   inp.training, inp.assumptions)))
