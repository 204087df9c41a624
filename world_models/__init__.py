"""World models: the action-conditioned latent video dynamics model (diffusers LTX parts), its
training, the world-model env that stands in for a simulator, and videos of its predictions."""

from world_models.dynamics_config import PRESETS, DynamicsModelConfig, make_config, with_overrides
from world_models.dynamics_model import DynamicsModel

__all__ = ["PRESETS", "DynamicsModel", "DynamicsModelConfig", "make_config", "with_overrides"]
