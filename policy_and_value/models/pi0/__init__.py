"""pi0 / pi0.5 VLA policy (PaliGemma prefix + Gemma action expert, flow matching) for RL and imitation.

``model.policy_type: pi0`` / ``pi05`` build it through ``factory.build_pi0_policy`` / ``build_pi05_policy``
(named in ``policy_and_value/models/registry.py``).

Names are imported on first use (PEP 562), so reading a preset or validating a config does not import
transformers (about two seconds of every job's and every ``--validate-only``'s start-up).
"""

from __future__ import annotations

from toolkits.base.lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "configuration_pi0": ("PRESETS", "GemmaSpec", "Pi0Config", "VisionSpec", "make_config"),
        "factory": ("build_pi0_policy", "build_pi05_policy"),
        "modeling_pi0": ("Pi0Model", "count_parameters"),
        "normalize": ("Normalizer", "Stats", "load_norm_stats", "save_norm_stats"),
        "policy_pi0": ("Pi0Inputs", "Pi0Policy"),
        "tokenizer_pi0": ("PromptTokenizer", "build_prompt_tokenizer", "format_prompt"),
        "weights": (
            "from_openpi_key",
            "from_openpi_state_dict",
            "from_pretrained",
            "load_openpi_checkpoint",
            "save_pretrained",
            "to_openpi_key",
        ),
    },
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
