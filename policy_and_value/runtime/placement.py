"""The component placement grammar (RLinf's): which device hosts which rank of env, rollout, actor.

``cluster.component_placement`` maps component keys (``env``, or comma-joined ``env,rollout`` to share)
to a placement string over global device indices (node = index // devices_per_node):
``all`` | ``3`` | ``0,2,3`` | ``0-3`` | ``0-3,5,14`` | ``DEVICES:PROCESSES`` such as ``0-1:0-3``
(process ranks 0-3 spread evenly over devices 0-1, i.e. two processes per device).
"""

from __future__ import annotations

from dataclasses import dataclass, field

COMPONENTS = ("env", "rollout", "actor")
ALLOWED = (
    "'all', an index '3', a list '0,2,3', a range '0-3', a mix '0-3,5', or 'DEVICES:PROCESSES' like '0-1:0-3'"
)


class PlacementError(ValueError):
    """A placement that does not parse or does not fit the cluster (one line)."""


@dataclass(frozen=True)
class ProcessSlot:
    """One process of a component: its rank and the device it runs on."""

    component: str
    rank: int
    world_size: int
    node: int
    local_device: int
    global_device: int


@dataclass(frozen=True)
class Placement:
    """Ranks of every component and the devices they occupy."""

    slots: dict[str, list[ProcessSlot]]
    num_nodes: int
    devices_per_node: int
    _per_device: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def world_size(self, component: str) -> int:
        return len(self.slots[component])

    def processes_on_device(self, global_device: int) -> int:
        """How many processes (of all components) share this device; each gets 1/n of it."""
        return self._per_device.get(global_device, 0)

    def describe(self) -> str:
        """One line per used device: which ranks live there."""
        lines = []
        for dev in sorted(self._per_device):
            ranks = [
                f"{s.component}[{s.rank}]"
                for comp in self.slots.values()
                for s in comp
                if s.global_device == dev
            ]
            lines.append(
                f"node {dev // self.devices_per_node} device {dev % self.devices_per_node}: {' '.join(ranks)}"
            )
        return "\n".join(lines)


def _parse_indices(text: str, key: str, value: str, limit: int) -> list[int]:
    """'0-3,5' -> [0, 1, 2, 3, 5]; 'all' -> every index below ``limit``."""
    text = text.strip()
    if text == "all":
        return list(range(limit))
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise PlacementError(
                f"config error: cluster.component_placement.{key}={value!r}: cannot parse {part!r}; allowed: {ALLOWED}"
            ) from None
    if len(set(out)) != len(out):
        raise PlacementError(
            f"config error: cluster.component_placement.{key}={value!r}: an index is listed twice"
        )
    return out


def parse_placement(
    component_placement: dict[str, str | int],
    num_nodes: int,
    devices_per_node: int,
    components: tuple[str, ...] = COMPONENTS,
) -> Placement:
    """Parse and check a placement against ``num_nodes * devices_per_node`` devices."""
    total = num_nodes * devices_per_node
    assigned: dict[str, list[int]] = {}
    for raw_key, raw_value in component_placement.items():
        value = str(raw_value)
        names = [n.strip() for n in str(raw_key).split(",") if n.strip()]
        for name in names:
            if name not in components:
                raise PlacementError(
                    f"config error: cluster.component_placement.{raw_key}={value!r}: unknown component {name!r}; "
                    f"allowed: {', '.join(components)}"
                )
            if name in assigned:
                raise PlacementError(
                    f"config error: cluster.component_placement.{raw_key}={value!r}: component {name!r} is placed twice"
                )
        if ":" in value:
            dev_text, proc_text = value.split(":", 1)
            devices = _parse_indices(dev_text, raw_key, value, total)
            procs = _parse_indices(proc_text, raw_key, value, total)
            if sorted(procs) != list(range(len(procs))):
                raise PlacementError(
                    f"config error: cluster.component_placement.{raw_key}={value!r}: process ranks must be 0..P-1"
                )
            if len(procs) % len(devices):
                raise PlacementError(
                    f"config error: cluster.component_placement.{raw_key}={value!r}: {len(procs)} processes do not "
                    f"spread evenly over {len(devices)} devices"
                )
            per = len(procs) // len(devices)
            ranks_devices = [devices[r // per] for r in range(len(procs))]
        else:
            ranks_devices = _parse_indices(value, raw_key, value, total)
        for dev in ranks_devices:
            if dev < 0 or dev >= total:
                raise PlacementError(
                    f"config error: cluster.component_placement.{raw_key}={value!r}: device {dev} does not exist; "
                    f"the cluster has {total} (num_nodes={num_nodes} x {devices_per_node} per node: 0-{total - 1})"
                )
        for name in names:
            assigned[name] = ranks_devices
    missing = [c for c in components if c not in assigned]
    if missing:
        raise PlacementError(
            f"config error: cluster.component_placement={dict(component_placement)}: no placement for {', '.join(missing)}"
        )
    slots: dict[str, list[ProcessSlot]] = {}
    per_device: dict[int, int] = {}
    for name in components:
        devs = assigned[name]
        slots[name] = [
            ProcessSlot(name, r, len(devs), d // devices_per_node, d % devices_per_node, d)
            for r, d in enumerate(devs)
        ]
        for d in devs:
            per_device[d] = per_device.get(d, 0) + 1
    return Placement(slots, num_nodes, devices_per_node, per_device)
