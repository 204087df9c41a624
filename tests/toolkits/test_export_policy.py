"""Exporting a checkpoint as a policy directory: rollout (EMA) or actor weights, LoRA merged, with
tokenizer, norm stats and deploy.json; it loads with from_pretrained, as rollout.model_dir and in the
server; damaged or partial checkpoints are one line naming the file, and nothing is written. A real job's
checkpoint is exported by the CLI and served in tests/runtime/test_runner_outcome.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.assets import REPO

INIT_DIR = "assets/metaworld_outcome/policy"  # relative, as jobs save it: resolved against the repository
JOB = {
    "model": {
        "policy_type": "pi0", "action_dim": 4, "num_action_chunks": 4, "add_value_head": False,
        "pi0": {"preset": "tiny", "num_steps": 2, "is_lora": True, "lora_rank": 4},
    },
    "env": {
        "train": {"env_type": "metaworld", "tasks": ["reach-v3", "button-press-topdown-v3"],
                  "cameras": ["corner", "gripperPOV"], "num_action_chunks": 4},
        "eval": {"env_type": "metaworld", "tasks": ["reach-v3", "door-open-v3"], "cameras": ["corner", "gripperPOV"],
                 "num_action_chunks": 4, "max_episode_steps": 150},
    },
    "rollout": {"model_dir": INIT_DIR, "rollout_ema_decay": 0.5},
    "runner": {"logger": {"experiment_name": "tiny_lora"}},
}  # fmt: skip


def job_policy(cfg, seed: int):
    """The LoRA policy the job builds, with adapters and heads moved off their initial values."""
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.registry import make_policy

    spec = EnvSpec(4, 4, 39, (2, 64, 64), tuple(cfg.env.train.tasks))
    policy = make_policy(cfg.model, spec, cfg.algorithm.logprob_type, model_dir=str(REPO / INIT_DIR))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "lora_" in name or "action_out_proj" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
    return policy.eval()


def actions(policy, seed: int = 0) -> torch.Tensor:
    """Deterministic (seeded ODE) actions of ``policy`` for a fixed random observation."""
    gen = torch.Generator().manual_seed(123)
    obs = {
        "images": torch.randint(0, 256, (2, 2, 64, 64, 3), dtype=torch.uint8, generator=gen),
        "state": torch.randn(2, 39, generator=gen),
        "prompt": ["reach the goal position", "press the button from the top"],
    }
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return policy.predict(obs, mode="eval").actions


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The checkpoint of ``write_checkpoint`` (built once for the module)."""
    return write_checkpoint(tmp_path_factory.mktemp("log"))


def write_checkpoint(log_dir: Path):
    """A ``global_step_3`` checkpoint laid out as the runner writes it: actor DCP (model + optimiser),
    rollout safetensors (other weights than the actor's, as with EMA), runner state and config.yaml."""
    import torch.distributed.checkpoint as dcp
    import yaml
    from safetensors.torch import save_file
    from torch.distributed.checkpoint.state_dict import get_state_dict

    from policy_and_value.config import JobConfig
    from toolkits.base.checkpoint import save_runner_state

    cfg = JobConfig.model_validate(JOB)
    rollout, actor = job_policy(cfg, seed=1), job_policy(cfg, seed=2)
    step = log_dir / "checkpoints" / "global_step_3"
    (step / "rollout").mkdir(parents=True)
    save_file(
        {k: v.contiguous() for k, v in rollout.state_dict().items()},
        str(step / "rollout" / "model.safetensors"),
    )
    model_sd, optim_sd = get_state_dict(
        actor, torch.optim.AdamW([p for p in actor.parameters() if p.requires_grad])
    )
    dcp.save(
        {"model": model_sd, "optim": optim_sd, "scheduler": {"last_epoch": 3}},
        checkpoint_id=str(step / "actor"),
    )
    save_runner_state(str(step), 3, {"env": None})
    (step / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    (step.parent / "latest").write_text("global_step_3\n")
    return step, cfg, rollout, actor


def test_export_rollout_weights_merges_lora_and_writes_a_complete_directory(
    checkpoint, tmp_path, monkeypatch
):
    from policy_and_value.models.pi0 import from_pretrained
    from toolkits.ckpt_convertor.export_policy import export_policy

    step, _, rollout, actor = checkpoint
    monkeypatch.chdir(tmp_path)  # rollout.model_dir is relative to the repository, not to the cwd
    out = export_policy(step.parent.parent, tmp_path / "policy")  # the log dir: its latest checkpoint
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "norm_stats.json", "tokenizer.json", "deploy.json"} <= names
    assert "lora" not in names and not list(tmp_path.glob(".tmp_*"))
    config = json.loads((out / "config.json").read_text())
    assert config["is_lora"] is False and config["lora_path"] is None
    deploy = json.loads((out / "deploy.json").read_text())
    assert deploy["cameras"] == ["corner", "gripperPOV"] and deploy["image_size"] == 64
    assert (deploy["state_dim"], deploy["action_dim"], deploy["chunk_size"]) == (39, 4, 4)
    assert set(deploy["prompts"]) == {"reach-v3", "button-press-topdown-v3", "door-open-v3"}
    assert deploy["source"]["weights"] == "rollout" and deploy["source"]["global_step"] == 3
    from safetensors.torch import load_file

    merged, saved = (
        load_file(str(out / "model.safetensors")),
        load_file(str(step / "rollout" / "model.safetensors")),
    )
    layer = "model.action_expert.layers.0.mlp.down_proj"  # the adapters moved its weights
    assert not torch.allclose(merged[f"{layer}.weight"], saved[f"{layer}.base_layer.weight"], atol=1e-4)
    exported = from_pretrained(out).eval()
    assert not exported.cfg.is_lora
    torch.testing.assert_close(actions(exported), actions(rollout), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(actions(exported), actions(actor), atol=1e-3)


def test_export_actor_weights_and_load_as_model_dir_and_in_the_server(checkpoint, tmp_path):
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.pi0 import from_pretrained
    from policy_and_value.models.registry import make_policy
    from toolkits.ckpt_convertor.export_policy import main
    from toolkits.deploy.served import ServedPolicy

    step, cfg, _, actor = checkpoint
    assert main(["--checkpoint", str(step), "--out", str(tmp_path / "policy"), "--weights", "actor"]) == 0
    out = tmp_path / "policy"
    torch.testing.assert_close(actions(from_pretrained(out).eval()), actions(actor), atol=1e-5, rtol=1e-5)
    # a new job starts from it (rollout.model_dir), LoRA or not
    spec = EnvSpec(4, 4, 39, (2, 64, 64), ("reach-v3",))
    for model in (cfg.model, cfg.model.model_copy(update={"pi0": {"preset": "tiny", "num_steps": 2}})):
        assert make_policy(model, spec, model_dir=str(out)).cfg.state_dim == 39
    served = ServedPolicy(out)  # cameras and prompts from deploy.json
    assert served.metadata()["cameras"] == ["corner", "gripperPOV"]
    obs = {"observation/image": torch.zeros(64, 64, 3, dtype=torch.uint8).numpy(),
           "observation/wrist_image": torch.zeros(3, 64, 64, dtype=torch.uint8).numpy(),
           "observation/state": torch.zeros(39).numpy(), "prompt": "reach-v3"}  # fmt: skip
    assert served.infer(obs)["actions"].shape == (4, 4)


def _damage(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    ("damaged", "weights"),
    [
        ("rollout/model.safetensors", "rollout"),
        ("actor/__0_0.distcp", "actor"),
        ("actor/__0_0.distcp", "rollout"),  # a damaged checkpoint is refused whatever is exported
        ("actor/.metadata", "actor"),
        ("runner_state.pt", "rollout"),
        ("config.yaml", "rollout"),
    ],
)
def test_damaged_or_partial_checkpoint_is_one_line_naming_the_file(
    checkpoint, tmp_path, capsys, damaged, weights
):
    from toolkits.ckpt_convertor.export_policy import main

    step = tmp_path / "global_step_3"
    shutil.copytree(checkpoint[0], step)
    if damaged == "config.yaml":
        (step / damaged).unlink()  # partial: a file missing
    else:
        _damage(step / damaged)
    out = tmp_path / "policy"
    assert main(["--checkpoint", str(step), "--out", str(out), "--weights", weights]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(step / damaged) in err, err
    assert not out.exists() and not list(tmp_path.glob(".tmp_*"))


def test_refuses_to_overwrite_a_directory_that_is_not_a_policy(checkpoint, tmp_path, capsys):
    from toolkits.ckpt_convertor.export_policy import main

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    assert main(["--checkpoint", str(checkpoint[0]), "--out", str(tmp_path / "notes")]) == 2
    assert "is not a policy directory" in capsys.readouterr().err
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_export_publishes_into_a_registry_as_the_next_version(checkpoint, tmp_path, capsys):
    from toolkits.ckpt_convertor.export_policy import main
    from toolkits.deploy.registry import PolicyRegistry

    step = checkpoint[0]
    root = tmp_path / "registry"
    assert main(["--checkpoint", str(step), "--registry", str(root)]) == 2  # no registry there yet
    assert "not a policy registry" in capsys.readouterr().err
    reg = PolicyRegistry.create(root)
    assert main(["--checkpoint", str(step), "--registry", str(root)]) == 0
    assert (
        main(["--checkpoint", str(step), "--registry", str(root), "--weights", "actor", "--not-current"]) == 0
    )
    assert reg.versions() == [1, 2] and reg.current() == 1
    manifest = reg.manifest(2)
    assert manifest.parent == 1 and manifest.source == {"checkpoint": str(step.resolve()), "weights": "actor"}
    assert {"config.json", "model.safetensors", "deploy.json"} <= set(manifest.files) and reg.verify(2) == []
    with pytest.raises(SystemExit):  # argparse: one of the two
        main(["--checkpoint", str(step), "--registry", str(root), "--out", str(tmp_path / "p")])
    assert "not allowed with argument" in capsys.readouterr().err


def test_export_in_openpi_layout_is_read_back_with_its_statistics_where_openpi_looks(checkpoint, tmp_path):
    from safetensors.torch import load_file

    from policy_and_value.models.pi0 import from_pretrained, load_norm_stats
    from policy_and_value.models.pi0.weights import is_openpi_layout
    from toolkits.ckpt_convertor.export_policy import main

    step, _, rollout, _ = checkpoint
    out = tmp_path / "openpi"
    assert main(["--checkpoint", str(step), "--out", str(out), "--layout", "openpi"]) == 0
    assert is_openpi_layout(list(load_file(str(out / "model.safetensors"))))
    stats = load_norm_stats(out / "assets" / "metaworld" / "norm_stats.json")
    assert set(stats) == {"state", "actions"} and stats["state"].q99.numel() == 39
    torch.testing.assert_close(actions(from_pretrained(out).eval()), actions(rollout), atol=1e-5, rtol=1e-5)
    assert main(["--checkpoint", str(step), "--out", str(tmp_path / "x"), "--asset-id", "../up"]) == 2
