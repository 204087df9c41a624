"""World models: the action-conditioned latent video dynamics model (diffusers LTX parts), its
training, the world-model env that stands in for a simulator, and videos of its predictions.

Names are imported on first use, so the state model (torch alone) needs no diffusers."""

from __future__ import annotations

from toolkits.base.lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "dynamics_config": ("PRESETS", "DynamicsModelConfig", "make_config", "with_overrides"),
        "dynamics_model": ("DynamicsModel",),
    },
)

__all__ = ["PRESETS", "DynamicsModel", "DynamicsModelConfig", "make_config", "with_overrides"]
