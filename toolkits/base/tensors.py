"""Moving a batch of tensors (and the other values beside them) to a device."""

from __future__ import annotations

from typing import Any

import torch


def tensors_to(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """``batch`` with its tensors moved to ``device`` (other values, e.g. prompt lists, as they are)."""
    return {
        k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()
    }
