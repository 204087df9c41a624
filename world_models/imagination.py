"""Open-loop imagination over several action chunks, each chunk imagined from the frames (and state)
imagined before, as the world-model env steps: for benchmarks that compare imagined outcomes with real
ones (``experiments.harness.wm_fidelity``, ``experiments.harness.wm_action_ranking``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from world_models.dynamics_model import DynamicsModel

# (chunk index, current frames [N, V, H, W, 3], current state or None, planned chunk [N, C, A]) -> chunk
ChunkPolicy = Callable[[int, torch.Tensor, torch.Tensor | None, torch.Tensor], torch.Tensor]


def open_loop(
    model: DynamicsModel,
    history: torch.Tensor,
    state: torch.Tensor | None,
    actions: torch.Tensor,
    kw: dict[str, Any],
    policy: ChunkPolicy | None = None,
) -> torch.Tensor:
    """Imagine the ``actions.shape[1] // C`` chunks of ``actions`` [N, K*C, A] one after the other from
    ``history`` uint8 [N, T_h, V, H, W, 3] and ``state``; ``kw`` goes to ``model.imagine`` (prompt, noise,
    num_inference_steps). With ``policy``, chunk i is ``policy(i, frames, state, planned)`` instead, given
    the last (imagined) frames and state (closed loop in imagination). Returns the last chunk's frames
    uint8 [N, T_f, V, S, S, 3]."""
    c, t_h = model.cfg.action_chunk, model.cfg.history_frames
    for i in range(actions.shape[1] // c):
        chunk = actions[:, i * c : (i + 1) * c]
        if policy is not None:
            chunk = policy(i, history[:, -1], state, chunk)
        out = model.imagine(history, state, chunk, **kw)
        history = torch.cat([history, out["images"].cpu()], dim=1)[:, -t_h:]
        if out["state"] is not None:
            state = out["state"].cpu()
    return out["images"].cpu()
