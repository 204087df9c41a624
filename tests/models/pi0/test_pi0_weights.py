"""pi0 weights: published sizes, save/load round trip, openpi-layout loading, strict key checks."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from policy_and_value.models.pi0 import (
    Pi0Model,
    Stats,
    count_parameters,
    from_pretrained,
    load_openpi_checkpoint,
    make_config,
    save_pretrained,
)


def test_published_presets_match_paligemma_and_gemma_300m_on_meta_device():
    with torch.device("meta"):
        pi0 = count_parameters(Pi0Model(make_config("pi0")))
        pi05 = count_parameters(Pi0Model(make_config("pi05")))
    # PaliGemma-3B at 224 px: SigLIP So400m/14 without the pooling head, linear projector, Gemma 2B with
    # PaliGemma's 257,152-token vocabulary
    assert pi0["vision_tower"] == 412_442_352
    assert pi0["multi_modal_projector"] == 1152 * 2048 + 2048
    assert pi0["language_model"] == 2_508_531_712
    assert pi0["vision_tower"] + pi0["multi_modal_projector"] + pi0["language_model"] == 2_923_335_408
    # Gemma 300M expert (width 1024, 18 layers, MLP 4096, 8 heads, 1 KV head of 256)
    assert pi0["action_expert"] == 311_464_960
    assert 3.2e9 < pi0["total"] < 3.3e9  # published: "3.3B"
    # pi0.5: adaRMS norms (dense 1024 -> 3 x 1024 in each of 2 x 18 + 1 norms) and time MLP, no state proj
    assert pi05["action_expert"] == pi0["action_expert"] + 37 * (1024 * 3072 + 3072) - 37 * 1024
    assert "state_proj" not in pi05 and "time_mlp_in" in pi05


def _stats(dim: int) -> Stats:
    return Stats.from_data(torch.randn(100, dim) * 2 + 1)


def _eval_actions(policy, obs) -> torch.Tensor:
    torch.manual_seed(7)
    return policy.predict(obs, mode="eval").actions


@pytest.mark.parametrize("preset", ["tiny", "tiny_pi05"])
def test_save_load_round_trip(make_policy, obs, tmp_path, preset):
    policy = make_policy(preset, add_value_head=True)
    policy.set_norm_stats({"state": _stats(4), "actions": _stats(4)})
    save_pretrained(policy, tmp_path / "policy")
    assert {"config.json", "model.safetensors", "norm_stats.json", "tokenizer.json"} <= {
        p.name for p in (tmp_path / "policy").iterdir()
    }
    loaded = from_pretrained(tmp_path / "policy")
    assert loaded.cfg == policy.cfg
    torch.testing.assert_close(_eval_actions(loaded, obs), _eval_actions(policy, obs))
    assert (
        loaded.tokenizer(["open the drawer"])[0].tolist() == policy.tokenizer(["open the drawer"])[0].tolist()
    )


def test_a_policy_saved_again_writes_the_same_bytes(make_policy, tmp_path):
    """Rebuilt assets check against their SHA256SUMS: safetensors writes metadata keys in a random order
    (safetensors#584), so the weights file carries one."""
    policy = make_policy("tiny")
    for i in range(8):
        save_pretrained(policy, tmp_path / f"p{i}")
    files = {(tmp_path / f"p{i}" / "model.safetensors").read_bytes() for i in range(8)}
    assert len(files) == 1


def test_lora_adapter_round_trip(make_policy, obs, tmp_path):
    policy = make_policy("tiny", is_lora=True, lora_rank=4)
    with torch.no_grad():  # give the zero-initialised B matrices values so the adapter matters
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)
    save_pretrained(policy, tmp_path / "lora_policy")
    assert (tmp_path / "lora_policy" / "lora" / "adapter_model.safetensors").exists()
    loaded = from_pretrained(tmp_path / "lora_policy")
    torch.testing.assert_close(_eval_actions(loaded, obs), _eval_actions(policy, obs))


# A few names as openpi's PyTorch pi0 writes them (PI0Pytorch.state_dict()); the mapping must hit them.
OPENPI_NAMES = [
    "paligemma_with_expert.paligemma.model.vision_tower.vision_model.embeddings.patch_embedding.weight",
    "paligemma_with_expert.paligemma.model.vision_tower.vision_model.post_layernorm.weight",
    "paligemma_with_expert.paligemma.model.multi_modal_projector.linear.weight",
    "paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight",
    "paligemma_with_expert.paligemma.model.language_model.layers.0.self_attn.q_proj.weight",
    "paligemma_with_expert.gemma_expert.model.layers.1.mlp.down_proj.weight",
    "paligemma_with_expert.gemma_expert.model.norm.weight",
    "state_proj.weight",
    "action_time_mlp_in.weight",
    "action_out_proj.bias",
]


def test_openpi_layout_checkpoint_loads_exactly(make_policy, obs, tmp_path):
    source = make_policy("tiny", seed=3)
    save_pretrained(source, tmp_path / "src", layout="openpi")
    state = load_file(str(tmp_path / "src" / "model.safetensors"))
    assert set(OPENPI_NAMES) <= set(state)
    # what openpi's files also hold: PaliGemma's (tied) LM head and the expert's unused LM head
    state["paligemma_with_expert.paligemma.lm_head.weight"] = state[
        "paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight"
    ].clone()
    state["paligemma_with_expert.gemma_expert.lm_head.weight"] = torch.zeros(8, 32)
    save_file(state, str(tmp_path / "openpi.safetensors"))
    loaded = load_openpi_checkpoint(source.cfg, tmp_path / "openpi.safetensors", tmp_path / "src")
    torch.testing.assert_close(_eval_actions(loaded, obs), _eval_actions(source, obs))


def test_openpi_layout_missing_or_unexpected_keys_are_listed(make_policy, tmp_path):
    source = make_policy("tiny")
    save_pretrained(source, tmp_path / "src", layout="openpi")
    state = load_file(str(tmp_path / "src" / "model.safetensors"))
    del state[OPENPI_NAMES[4]]
    state["paligemma_with_expert.some_new_block.weight"] = torch.zeros(2)
    save_file(state, str(tmp_path / "broken.safetensors"))
    with pytest.raises(KeyError) as err:
        load_openpi_checkpoint(source.cfg, tmp_path / "broken.safetensors", tmp_path / "src")
    message = str(err.value)
    assert "missing keys (1): model.language_model.layers.0.self_attn.q_proj.weight" in message
    assert "unexpected keys (1): paligemma_with_expert.some_new_block.weight" in message


def test_architecture_mismatch_is_an_error(make_policy, tmp_path):
    save_pretrained(make_policy("tiny"), tmp_path / "p")
    with pytest.raises(KeyError, match="shape mismatches"):
        from_pretrained(tmp_path / "p", max_action_dim=16)
