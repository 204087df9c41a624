"""pi0 / pi0.5 VLA policy (PaliGemma prefix + Gemma action expert, flow matching) for RL and imitation.

``model.policy_type: pi0`` / ``pi05`` build it through ``factory.build_pi0_policy`` / ``build_pi05_policy``
(named in ``policy_and_value/models/registry.py``).
"""

from policy_and_value.models.pi0.configuration_pi0 import (
    PRESETS,
    GemmaSpec,
    Pi0Config,
    VisionSpec,
    make_config,
)
from policy_and_value.models.pi0.factory import build_pi0_policy, build_pi05_policy
from policy_and_value.models.pi0.modeling_pi0 import Pi0Model, count_parameters
from policy_and_value.models.pi0.normalize import Normalizer, Stats, load_norm_stats, save_norm_stats
from policy_and_value.models.pi0.policy_pi0 import Pi0Inputs, Pi0Policy
from policy_and_value.models.pi0.tokenizer_pi0 import PromptTokenizer, build_prompt_tokenizer, format_prompt
from policy_and_value.models.pi0.weights import (
    from_openpi_key,
    from_openpi_state_dict,
    from_pretrained,
    load_openpi_checkpoint,
    save_pretrained,
    to_openpi_key,
)

__all__ = [
    "PRESETS",
    "GemmaSpec",
    "Normalizer",
    "Pi0Config",
    "Pi0Inputs",
    "Pi0Model",
    "Pi0Policy",
    "PromptTokenizer",
    "Stats",
    "VisionSpec",
    "build_pi0_policy",
    "build_pi05_policy",
    "build_prompt_tokenizer",
    "count_parameters",
    "format_prompt",
    "from_openpi_key",
    "from_openpi_state_dict",
    "from_pretrained",
    "load_norm_stats",
    "load_openpi_checkpoint",
    "make_config",
    "save_norm_stats",
    "save_pretrained",
    "to_openpi_key",
]
