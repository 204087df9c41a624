"""pi0 network: output shapes, masks/positions, and the cached split forward == the joint forward."""

from __future__ import annotations

import pytest
import torch
from transformers.models.gemma.modeling_gemma import apply_rotary_pos_emb

from policy_and_value.models.pi0.gemma_layers import AdaRMSNorm, run_expert
from policy_and_value.models.pi0.preprocess import images_to_pixels, resize_with_pad
from policy_and_value.models.pi0.tokenizer_pi0 import discretize_state, format_prompt


@pytest.mark.parametrize(
    ("logprob_type", "value_per_action", "lp_shape", "v_shape"),
    [
        ("chunk_level", False, (3,), (3,)),
        ("action_level", True, (3, 4), (3, 4)),
        ("token_level", False, (3, 4, 4), (3,)),
    ],
)
def test_predict_shapes(make_policy, obs, logprob_type, value_per_action, lp_shape, v_shape):
    policy = make_policy(logprob_type=logprob_type, value_per_action=value_per_action, add_value_head=True)
    out = policy.predict(obs)
    assert out.actions.shape == (3, 4, 4) and out.actions.dtype == torch.float32
    assert out.logprob.shape == lp_shape and out.value.shape == v_shape
    k, h, d = policy.cfg.num_steps, policy.cfg.chunk_size, policy.cfg.max_action_dim
    assert out.replay["chains"].shape == (3, k + 1, h, d)
    assert out.replay["denoise_mask"].shape == (3, k) and out.replay["denoise_mask"].sum(-1).tolist() == [
        1,
        1,
        1,
    ]
    assert out.replay["lang_tokens"].shape == (3, policy.cfg.max_token_len)
    lp, value, ent = policy.evaluate({"obs": obs, **out.replay})
    assert lp.shape == ent.shape == lp_shape and value.shape == v_shape


def test_no_value_head_and_no_images(make_policy, obs):
    policy = make_policy()
    no_images = {k: v for k, v in obs.items() if k != "images"}
    out = policy.predict(no_images, mode="eval")
    assert out.value is None and out.actions.shape == (3, 4, 4)
    assert not out.replay["denoise_mask"].any() and torch.all(out.logprob == 0)


def test_image_mask_hides_a_view(make_policy, obs):
    """A masked view must not influence the actions (the prefix ignores its tokens)."""
    policy = make_policy()
    mask = torch.tensor([[True, False]] * 3)
    changed = dict(obs, images=obs["images"].clone(), image_mask=mask)
    changed["images"][:, 1] = 255 - changed["images"][:, 1]
    torch.manual_seed(5)
    a = policy.predict(dict(obs, image_mask=mask), mode="eval").actions
    torch.manual_seed(5)
    b = policy.predict(changed, mode="eval").actions
    torch.testing.assert_close(a, b)


def test_prompts_and_state_tokens(make_policy, obs):
    assert format_prompt("pick_up\nthe cup") == "pick up the cup\n"
    assert format_prompt("go", [0, 255], advantage=1) == "Task: go, Advantage: 1, State: 0 255;\nAction: "
    assert discretize_state(torch.tensor([[-1.0, -0.999, 0.0, 0.9999, 1.0, 5.0]])).tolist() == [
        [0, 0, 128, 255, 255, 255]
    ]
    policy = make_policy("tiny_pi05")
    texts = policy.prompts(obs, torch.zeros(3, 4), None)
    assert texts[0] == "Task: press the button, State: 128 128 128 128;\nAction: "
    tokens, mask = policy.tokenizer(texts)
    assert tokens[0, 0] == policy.tokenizer.bos_id and mask.sum(-1).max() < policy.cfg.max_token_len


def test_image_preprocessing():
    img = torch.full((1, 1, 32, 48, 3), 255, dtype=torch.uint8)
    px = images_to_pixels(img, 64)
    assert px.shape == (1, 1, 3, 64, 64)
    assert px.max() == 1.0 and px.min() == -1.0  # letterbox padding is black (-1)
    assert torch.all(px[0, 0, :, 32, :] == 1.0)  # the image row in the middle
    assert resize_with_pad(torch.zeros(2, 3, 64, 64), 64).shape == (2, 3, 64, 64)


# ---------------------------------------------------------------------------------------- reference
def _norm(mod, x, cond):
    return mod(x, cond) if isinstance(mod, AdaRMSNorm) else (mod(x), None)


def joint_forward(model, prefix_embeds, prefix_pad, suffix_embeds, block_starts, cond):
    """openpi's formulation: one sequence [prefix, suffix], per layer the two towers' q/k/v are
    concatenated and a single attention runs under the blockwise-causal 2-D mask."""
    n, p, _ = prefix_embeds.shape
    s = suffix_embeds.shape[1]
    pad = torch.cat([prefix_pad, torch.ones(n, s, dtype=torch.bool)], 1)
    blocks = torch.cat([torch.zeros(p, dtype=torch.long), torch.tensor(block_starts)]).cumsum(0)
    allowed = (blocks[None, :] <= blocks[:, None])[None] & pad[:, None, :] & pad[:, :, None]
    bias = torch.where(allowed, 0.0, -1e30)[:, None]
    pos = pad.long().cumsum(-1) - 1
    towers = [model.language_model, model.action_expert]
    hidden = [prefix_embeds, suffix_embeds]
    conds = [None, cond]
    for i in range(len(towers[0].layers)):
        layers = [t.layers[i] for t in towers]
        qs, ks, vs, gates = [], [], [], []
        for layer, h, c in zip(layers, hidden, conds):
            x, g = _norm(layer.input_layernorm, h, c)
            hd = 16
            qs.append(layer.self_attn.q_proj(x).view(n, h.shape[1], -1, hd).transpose(1, 2))
            ks.append(layer.self_attn.k_proj(x).view(n, h.shape[1], -1, hd).transpose(1, 2))
            vs.append(layer.self_attn.v_proj(x).view(n, h.shape[1], -1, hd).transpose(1, 2))
            gates.append(g)
        q, k, v = torch.cat(qs, 2), torch.cat(ks, 2), torch.cat(vs, 2)
        cos, sin = towers[0].rotary_emb(q, pos)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        att = torch.softmax(q @ k.transpose(-1, -2) * 16**-0.5 + bias, dim=-1) @ v
        att = att.transpose(1, 2).reshape(n, p + s, -1)
        new, start = [], 0
        for layer, h, c, g in zip(layers, hidden, conds, gates):
            y = layer.self_attn.o_proj(att[:, start : start + h.shape[1]])
            start += h.shape[1]
            h = h + (y if g is None else y * g)
            x, g2 = _norm(layer.post_attention_layernorm, h, c)
            y = layer.mlp(x)
            new.append(h + (y if g2 is None else y * g2))
        hidden = new
    return _norm(towers[1].norm, hidden[1], cond)[0]


@pytest.mark.parametrize("preset", ["tiny", "tiny_pi05"])
def test_cached_expert_equals_joint_forward(make_policy, obs, preset):
    policy = make_policy(preset)
    model = policy.model
    inputs = policy.prepare_inputs(obs)
    inputs.token_mask[1, 5:] = False  # ragged prompts: padding must be masked and skipped by RoPE
    prefix = policy.encode(inputs)
    x_t, t = torch.randn(3, 8, 8), torch.tensor([1.0, 0.5, 0.25])
    v, out = model.velocity(prefix, policy._state(inputs), x_t, t)

    embeds, blocks, cond = model.embed_suffix(policy._state(inputs), x_t, t)
    img = model.embed_images(inputs.pixels)
    prefix_embeds = torch.cat([img, model.language_model.embed_tokens(inputs.tokens)], 1)
    prefix_pad = torch.cat([torch.ones(img.shape[:2], dtype=torch.bool), inputs.token_mask], 1)
    ref = joint_forward(model, prefix_embeds, prefix_pad, embeds, blocks, cond)[:, -8:]
    torch.testing.assert_close(out, ref, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(v, model.action_out_proj(ref), atol=2e-5, rtol=1e-4)


def test_state_token_cannot_see_actions(make_policy, obs):
    """pi0's state token sits in its own block: changing the noisy actions leaves its output alone."""
    policy = make_policy()
    inputs = policy.prepare_inputs(obs)
    prefix = policy.encode(inputs)
    model = policy.model
    t = torch.full((3,), 0.5)
    outs = []
    for seed in (0, 1):
        x = torch.randn(3, 8, 8, generator=torch.Generator().manual_seed(seed))
        embeds, blocks, cond = model.embed_suffix(inputs.state, x, t)
        outs.append(run_expert(model.action_expert, embeds, prefix, blocks, cond))
    torch.testing.assert_close(outs[0][:, 0], outs[1][:, 0])
    assert not torch.allclose(outs[0][:, 1:], outs[1][:, 1:])


def test_flow_time_embedding_changes_velocity(make_policy, obs):
    for preset in ("tiny", "tiny_pi05"):
        policy = make_policy(preset)
        inputs = policy.prepare_inputs(obs)
        prefix = policy.encode(inputs)
        x = torch.randn(3, 8, 8)
        v1, _ = policy.model.velocity(prefix, policy._state(inputs), x, torch.full((3,), 0.9))
        v2, _ = policy.model.velocity(prefix, policy._state(inputs), x, torch.full((3,), 0.1))
        assert (v1 - v2).abs().max() > 1e-4, preset
