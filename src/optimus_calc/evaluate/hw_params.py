"""Hardware parameters as knobs: read one catalog field of the hardware an evaluation uses, or
return the hardware with that field changed (a pydantic ``model_copy`` of the catalog entry).

`breakeven` solves for these one at a time and `--sensitivity` nudges them by 1%. A parameter
is named by its catalog field (``memory_bandwidth_GBps``) and the role of the entry in the
node (the SmartNIC, the host CPU, the GPU-host link...), since one catalog link can serve
several roles (a DGX A100's GPUs, NICs and SmartNICs all sit on ``pcie4-x16``).
"""

from __future__ import annotations

import dataclasses

from optimus_calc.evaluate.context import Hardware
from optimus_calc.specs.training import Layout, Precision
from optimus_calc.record import record

LINK_ROLES = {
    "gpu_host_link": "GPU-host link",
    "smartnic_host_link": "SmartNIC host link",
    "nic_host_link": "NIC host link",
    "intra_link": "scale-up link",
}


def read_field(hw: Hardware, role: str, path: str) -> float:
    """The catalog field ``path`` (e.g. ``peak_TFLOPS.bf16``) of the entry in ``role``."""
    obj = getattr(hw, role)
    for part in path.split("."):
        obj = getattr(obj, part)
    return float(obj)


def with_fields(hw: Hardware, values: dict[tuple[str, str], object]) -> Hardware:
    """``hw`` with each (role, field path) set to its value, not validated: a number (a
    parameter's apply) or a column of one value per layout of a batch (the break-even searches
    stack values this way). Each entry is copied once, a nested model (``peak_TFLOPS``) once."""
    by_role: dict[str, dict[str, object]] = {}
    for (role, path), value in values.items():
        by_role.setdefault(role, {})[path] = value
    update = {}
    for role, fields in by_role.items():
        entry = getattr(hw, role)
        top: dict = {k: v for k, v in fields.items() if "." not in k}
        nested: dict[str, dict] = {}
        for k, v in fields.items():
            if "." in k:
                head, sub = k.split(".", 1)
                nested.setdefault(head, {})[sub] = v
        for head, subs in nested.items():
            top[head] = getattr(entry, head).model_copy(update=subs)
        update[role] = entry.model_copy(update=top)
    return dataclasses.replace(hw, **update)


@record
class Param:
    """One hardware field. ``role``: smartnic, cpu, node, gpu, nic, a link role of
    :data:`LINK_ROLES`, or layout (SmartNICs per node). ``roofline``: the symbol of
    compute.optimizer_step_time a SmartNIC's field enters through (B_mem, B_core, n_t, F_core,
    F_dev, or "joint" for the bandwidth pair): `breakeven` solves those in closed form. A CPU's
    fields enter DeepSpeed's phase-by-phase step (offload.cpu_rank_bandwidth, offload.adam_time,
    ...) and are searched."""

    role: str
    field: str
    label: str
    unit: str
    integer: bool = False
    roofline: str | None = None

    @property
    def key(self) -> str:
        return f"{self.role}.{self.field}"

    @property
    def name(self) -> str:
        """The field, with its role where the field name alone is ambiguous (links)."""
        return self.key if self.role in LINK_ROLES else self.field

    def entry(self, hw: Hardware):
        if self.role == "layout":
            return None
        return getattr(hw, self.role)

    def entry_name(self, hw: Hardware) -> str:
        if self.role == "layout":
            return "layout"
        return self.entry(hw).name

    def get(self, hw: Hardware, layout: Layout) -> float:
        if self.role == "layout":
            return float(layout.smartnics_per_node or hw.gpus_per_node)
        return read_field(hw, self.role, self.field)

    def apply(self, hw: Hardware, layout: Layout, value: float) -> tuple[Hardware, Layout]:
        """The hardware and layout with this field set to ``value`` (not validated: the
        sensitivity nudges integer fields by 1% as a continuous relaxation)."""
        v = int(value) if self.integer and float(value).is_integer() else float(value)
        if self.role == "layout":
            return hw, layout.model_copy(update={"smartnics_per_node": v})
        return with_fields(hw, {(self.role, self.field): v}), layout

    def changes(self, hw: Hardware, value: float) -> dict[str, float]:
        """The fields of this parameter's entry (paths such as ``peak_TFLOPS.bf16``) that
        :meth:`apply` sets for ``value``, and their new values: what the break-even searches
        stack as columns of one batch. Not for ``layout``."""
        assert self.role != "layout"
        return {self.field: float(value)}

    def upper_bound(self, hw: Hardware) -> float | None:
        """The largest value the catalog accepts for the field (its ``le``), if any."""
        if self.role == "layout":
            owner = Layout
            name = "smartnics_per_node"
        else:
            owner = type(self.entry(hw))
            head, _, sub = self.field.partition(".")
            name = head
            if sub:
                owner = type(getattr(self.entry(hw), head))
                name = sub
        info = owner.model_fields.get(name)
        for meta in getattr(info, "metadata", []):
            le = getattr(meta, "le", None)
            if le is not None:
                return float(le)
        return None


@record
class Joint(Param):
    """Memory bandwidth and per-core bandwidth raised together: the value is the bandwidth
    the optimizer can draw from one socket or card, min(memory_bandwidth_GBps x efficiency,
    cores x core_bandwidth_GBps) (a card: compute.optimizer_step_time's memory branch; a CPU:
    the same two limits of offload.cpu_rank_bandwidth, before they are shared by the ranks)."""

    @property
    def name(self) -> str:
        return "memory_bandwidth_GBps+core_bandwidth_GBps"

    @property
    def key(self) -> str:
        return f"{self.role}.{self.name}"

    def get(self, hw: Hardware, layout: Layout) -> float:
        e = self.entry(hw)
        eff = getattr(e, "memory_efficiency", None) or getattr(e, "stream_efficiency")
        return float(min(e.memory_bandwidth_GBps * eff, e.cores * e.core_bandwidth_GBps))

    def apply(self, hw: Hardware, layout: Layout, value: float) -> tuple[Hardware, Layout]:
        return with_fields(hw, {(self.role, k): v for k, v in self.changes(hw, value).items()}
                           ), layout

    def changes(self, hw: Hardware, value: float) -> dict[str, float]:
        """Both bandwidths scaled by ``value`` over today's achievable bandwidth."""
        e = self.entry(hw)
        k = float(value) / self.get(hw, None)  # type: ignore[arg-type]  (no layout field)
        return {"memory_bandwidth_GBps": e.memory_bandwidth_GBps * k,
                "core_bandwidth_GBps": e.core_bandwidth_GBps * k}

    def upper_bound(self, hw: Hardware) -> float | None:
        return None


def _soc(unit_clock: str) -> list[Param]:
    return [
        Param("smartnic", "memory_bandwidth_GBps", "memory bandwidth", "GB/s", roofline="B_mem"),
        Param("smartnic", "core_bandwidth_GBps", "bandwidth per core", "GB/s",
              roofline="B_core"),
        Param("smartnic", "cores", "cores", "cores", integer=True, roofline="n_t"),
        Param("smartnic", unit_clock, "core clock", "GHz", roofline="F_core"),
        Joint("smartnic", "memory_bandwidth_GBps", "memory and per-core bandwidth together "
              "(achievable)", "GB/s", roofline="joint"),
    ]


def smartnic_params(hw: Hardware) -> list[Param]:
    """A SmartNIC's fields (its kind: a SoC with cores, or an FPGA fabric with two tiers)."""
    sn = hw.smartnic
    assert sn is not None
    if sn.device_type == "fpga":
        own = [Param("smartnic", "memory_bandwidth_GBps", "memory bandwidth (fast tier)",
                     "GB/s", roofline="B_mem"),
               Param("smartnic", "fabric_fp32_TFLOPS", "fabric FP32 throughput", "TFLOP/s",
                     roofline="F_dev"),
               Param("smartnic", "memory_GB", "memory capacity (fast tier)", "GB"),
               Param("smartnic", "expansion_memory_GB", "expansion memory", "GB"),
               Param("smartnic", "expansion_bandwidth_GBps", "expansion bandwidth", "GB/s")]
    else:
        own = _soc("core_GHz") + [Param("smartnic", "memory_GB", "memory capacity", "GB")]
    return own + [
        Param("smartnic", "line_rate_Gbps", "network line rate", "Gb/s"),
        Param("smartnic_host_link", "bandwidth_GBps", "card host link", "GB/s"),
        Param("gpu_host_link", "bandwidth_GBps", "GPU-host link", "GB/s"),
        Param("layout", "smartnics_per_node", "cards per node", "cards", integer=True),
    ]


def host_params(link: str = "GPU-host link") -> list[Param]:
    """The host CPU's and node's fields an offload to host memory (or through it) depends on."""
    return [
        Param("cpu", "memory_bandwidth_GBps", "memory bandwidth per socket", "GB/s"),
        Param("cpu", "core_bandwidth_GBps", "bandwidth per core", "GB/s"),
        Param("cpu", "cores", "cores per socket", "cores", integer=True),
        Param("cpu", "base_GHz", "core clock", "GHz"),
        Joint("cpu", "memory_bandwidth_GBps", "memory and per-core bandwidth together "
              "(achievable, per socket)", "GB/s"),
        Param("node", "host_memory_GB", "host memory per node", "GB"),
        Param("node", "cpus", "CPU sockets per node", "sockets", integer=True),
        Param("gpu_host_link", "bandwidth_GBps", link, "GB/s"),
    ]



def system_params(hw: Hardware, precision: str) -> list[Param]:
    """The GPU's and the network's fields that enter the step time (for --sensitivity); the
    peak of the precision's GEMMs (NVFP4's is the catalog's fp4)."""
    peak = Precision(precision).gemm_dtype
    return [
        Param("gpu", f"peak_TFLOPS.{peak}", f"GPU peak ({peak})", "TFLOP/s"),
        Param("gpu", "hbm_bandwidth_GBps", "GPU HBM bandwidth", "GB/s"),
        Param("gpu", "memory_GB", "GPU memory", "GB"),
        Param("intra_link", "bandwidth_GBps", "scale-up link", "GB/s"),
        Param("nic", "line_rate_Gbps", "NIC line rate", "Gb/s"),
        Param("nic_host_link", "bandwidth_GBps", "NIC host link", "GB/s"),
        Param("gpu_host_link", "bandwidth_GBps", "GPU-host link", "GB/s"),
    ]
