"""LeRobot's async-inference wire format (lerobot 0.6.x, ``src/lerobot/transport/services.proto``), without lerobot.

The service ``transport.AsyncInference`` has four methods: ``Ready(Empty) -> Empty``,
``SendPolicyInstructions(PolicySetup) -> Empty``, ``SendObservations(stream Observation) -> Empty`` and
``GetActions(Empty) -> Actions``. Every ``data`` field holds a pickled object: a ``RemotePolicyConfig``, a
``TimedObservation`` (split into messages of at most 2 MiB: BEGIN, MIDDLE..., END; one END when it fits) and, in
answers, a list of ``TimedAction``. The message classes are built here from their descriptor (protobuf's runtime);
pickles from the network are read by ``safe_loads``, which builds only the classes listed in ``ALLOWED`` (LeRobot's
dataclasses become the lookalikes below, numpy arrays and torch tensors are rebuilt, tensors through
``torch.load(weights_only=True)``) and refuses any other global. ``dumps`` writes the lookalikes under LeRobot's
module path, so LeRobot's own client reads them as its classes.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE, SERVICE = "transport", "AsyncInference"
HELPERS = "lerobot.async_inference.helpers"  # where LeRobot's dataclasses live (their pickles name it)
CHUNK_BYTES = 2 * 1024 * 1024  # LeRobot's CHUNK_SIZE
BEGIN, MIDDLE, END = 1, 2, 3  # TransferState (0: TRANSFER_UNKNOWN)


def _messages() -> dict[str, type]:
    """The four message classes of services.proto, from a descriptor built here (no generated code)."""
    f = descriptor_pb2.FileDescriptorProto(
        name="worldrl/lerobot_transport.proto", package=PACKAGE, syntax="proto3"
    )
    enum = f.enum_type.add(name="TransferState")
    for number, name in enumerate(["TRANSFER_UNKNOWN", "TRANSFER_BEGIN", "TRANSFER_MIDDLE", "TRANSFER_END"]):
        enum.value.add(name=name, number=number)
    bytes_type, enum_type = (
        descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        descriptor_pb2.FieldDescriptorProto.TYPE_ENUM,
    )
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    obs = f.message_type.add(name="Observation")
    obs.field.add(name="transfer_state", number=1, type=enum_type, label=optional,
                  type_name=f".{PACKAGE}.TransferState")  # fmt: skip
    obs.field.add(name="data", number=2, type=bytes_type, label=optional)
    for name in ("Actions", "PolicySetup"):
        f.message_type.add(name=name).field.add(name="data", number=1, type=bytes_type, label=optional)
    f.message_type.add(name="Empty")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in ("Observation", "Actions", "PolicySetup", "Empty")
    }


MESSAGES = _messages()
Observation, Actions, PolicySetup, Empty = (
    MESSAGES[n] for n in ("Observation", "Actions", "PolicySetup", "Empty")
)


# ---- LeRobot's dataclasses (async_inference/helpers.py), the same fields
@dataclass
class TimedObservation:
    timestamp: float
    timestep: int
    observation: dict[str, Any]
    must_go: bool = False


@dataclass
class TimedAction:
    timestamp: float
    timestep: int
    action: Any  # a torch tensor [action_dim]


@dataclass
class RemotePolicyConfig:
    policy_type: str
    pretrained_name_or_path: str
    lerobot_features: dict[str, Any]
    actions_per_chunk: int
    device: str = "cpu"
    rename_map: dict[str, str] = field(default_factory=dict)


LOOKALIKES = {cls.__name__: cls for cls in (TimedObservation, TimedAction, RemotePolicyConfig)}


def _tensor_from_bytes(data: bytes) -> Any:
    """A tensor's storage as torch pickles it, read with ``weights_only=True`` (no code runs)."""
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


def _allowed() -> dict[tuple[str, str], Any]:
    import collections

    import numpy as np
    import torch

    numpy_globals = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): __import__("codecs").encode,
    }
    for core in ("numpy.core", "numpy._core"):
        numpy_globals |= {
            (f"{core}.multiarray", "_reconstruct"): np._core.multiarray._reconstruct,
            (f"{core}.multiarray", "scalar"): np._core.multiarray.scalar,
            (f"{core}.numeric", "_frombuffer"): np._core.numeric._frombuffer,
        }
    return {
        **{(HELPERS, name): cls for name, cls in LOOKALIKES.items()},
        **numpy_globals,
        ("torch._utils", "_rebuild_tensor_v2"): torch._utils._rebuild_tensor_v2,
        ("torch.storage", "_load_from_bytes"): _tensor_from_bytes,
        ("collections", "OrderedDict"): collections.OrderedDict,
    }


class WireError(ValueError):
    """A payload the server will not read; the message (one line) goes back to the client."""


class _SafeUnpickler(pickle.Unpickler):
    allowed: dict[tuple[str, str], Any] = {}

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise WireError(
                f"pickle global {module}.{name} is not accepted (LeRobot's dataclasses, numpy arrays and torch "
                "tensors only)"
            ) from None


def safe_loads(data: bytes) -> Any:
    """Unpickle ``data`` building only the allowed classes; anything else is a ``WireError``."""
    if not _SafeUnpickler.allowed:
        _SafeUnpickler.allowed = _allowed()
    try:
        return _SafeUnpickler(io.BytesIO(data)).load()
    except WireError:
        raise
    except Exception as err:  # noqa: BLE001 - a truncated or malformed pickle, whatever the unpickler raised
        raise WireError(
            f"unreadable pickle ({type(err).__name__}: {' '.join(str(err).split())[:200]})"
        ) from None


class _LeRobotPickler(pickle._Pickler):  # the Python pickler: save_global can be overridden
    def save_global(self, obj: Any, name: str | None = None) -> None:
        if isinstance(obj, type) and LOOKALIKES.get(obj.__name__) is obj:  # under LeRobot's module path
            self.save(HELPERS)
            self.save(obj.__name__)
            self.write(pickle.STACK_GLOBAL)
            self.memoize(obj)
            return
        super().save_global(obj, name)


def dumps(obj: Any) -> bytes:
    """Pickle ``obj`` as LeRobot's side would: the lookalike dataclasses named as LeRobot's own."""
    buf = io.BytesIO()
    _LeRobotPickler(buf, protocol=4).dump(obj)
    return buf.getvalue()


def chunked(payload: bytes) -> Iterator[Any]:
    """``Observation`` messages carrying ``payload`` as LeRobot's ``send_bytes_in_chunks`` splits it."""
    sent = 0
    while sent < len(payload):
        state = END if sent + CHUNK_BYTES >= len(payload) else BEGIN if sent == 0 else MIDDLE
        yield Observation(transfer_state=state, data=payload[sent : sent + CHUNK_BYTES])
        sent += CHUNK_BYTES


def joined(messages: Iterable[Any], limit: int) -> bytes | None:
    """The payload of a stream of ``Observation`` messages (the last complete one; None: none completed), at most
    ``limit`` bytes."""
    buf, done = bytearray(), None
    for msg in messages:
        if msg.transfer_state == BEGIN:
            buf = bytearray(msg.data)
        elif msg.transfer_state in (MIDDLE, END):
            buf += msg.data
        else:
            raise WireError(f"transfer_state={msg.transfer_state}: expected BEGIN (1), MIDDLE (2) or END (3)")
        if len(buf) > limit:
            raise WireError(f"an observation of more than {limit} bytes (--max-message-mb)")
        if msg.transfer_state == END:
            done, buf = bytes(buf), bytearray()
    return done
