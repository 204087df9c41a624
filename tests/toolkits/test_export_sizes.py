"""``export_policy`` takes every size from the checkpoint's own config.yaml, for every env type: a LIBERO and a
ManiSkill checkpoint (``ppo_pi0_libero`` / ``ppo_pi0_maniskill`` at their tiny sizes, laid out as the runner
writes them, without stepping a simulator) and a LIBERO world-model one export with their 8-number state and
7-dim actions, their cameras and their tasks' instructions, and are served and queried through openpi's client."""

import numpy as np
import pytest
import torch

from tests.assets import write_complete_checkpoint
from tests.deploy.conftest import NO_OPENPI_CLIENT

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402

LIBERO_CAMERAS = ["agentview", "robot0_eye_in_hand"]
LIBERO_TASK = "pick_up_the_alphabet_soup_and_place_it_in_the_basket"
LIBERO_PROMPT = "pick up the alphabet soup and place it in the basket"
JOBS = {
    # config, overrides, cameras, (state, action, chunk), a task, its instruction, how many prompts
    "libero": ("ppo_pi0_libero", [], LIBERO_CAMERAS, (8, 7, 5), LIBERO_TASK, LIBERO_PROMPT, 3),
    "maniskill": ("ppo_pi0_maniskill", [], ["base_camera"], (8, 7, 5),
                  "PickCube-v1", "pick up the red cube and move it to the green goal", 3),
    # imagined LIBERO beside a real LIBERO group, evaluated in LIBERO, its world model's folder absent (as on a
    # machine the checkpoint was copied to): the real envs tell the sizes; prompts of both groups' and eval's tasks
    "libero_world_model": ("rl_release_libero", ["rollout.model_dir=null"], LIBERO_CAMERAS, (8, 7, 4),
                           LIBERO_TASK, LIBERO_PROMPT, 3),
    # rl_release: imagined in the observation model, evaluated in Meta-World; the served policy asks a robot for
    # the two cameras, the hand's 4 numbers and the prompt, no simulator state
    "observation_only": ("rl_release", ["rollout.model_dir=null"], ["corner", "gripperPOV"], (4, 4, 4),
                         "door-open-v3", "open the door with a revolving joint", 3),
}  # fmt: skip


def job_checkpoint(root, config: str, overrides: list[str], sizes: tuple[int, int, int]):
    """A ``global_step_5`` checkpoint of ``config`` (schema-validated, as export reads it) whose rollout and
    actor weights are the policy the runner builds for ``sizes`` (state, action, chunk), its action head moved
    off its init."""
    import yaml

    from policy_and_value.config import JobConfig
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.registry import make_policy
    from toolkits.base.compose import compose_config

    cfg = JobConfig.model_validate(compose_config(config, overrides))
    train = cfg.env.train
    state_dim, action_dim, chunk = sizes
    spec = EnvSpec(action_dim, chunk, state_dim, (len(train.cameras), 64, 64), tuple(train.tasks))
    torch.manual_seed(cfg.runner.seed)
    policy = make_policy(
        cfg.model, spec, logprob_type=cfg.algorithm.logprob_type,
        value_per_action=cfg.algorithm.reward_type == "action_level",
    )  # fmt: skip
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "action_out_proj" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(3)))
    step = write_complete_checkpoint(
        root / "checkpoints" / "global_step_5", 5,
        {k: v.detach().clone().contiguous() for k, v in policy.state_dict().items()},
    )  # fmt: skip
    (step / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    return step, policy.eval()


@pytest.fixture(scope="module", params=list(JOBS))
def exported(request, tmp_path_factory):
    """(job, checkpoint policy, exported directory, what the export printed)."""
    import contextlib
    import io

    from toolkits.ckpt_convertor.export_policy import main

    config, overrides, _, sizes, *_ = JOBS[request.param]
    if request.param.startswith("libero"):
        pytest.importorskip(
            "libero.libero", reason="LIBERO's benchmark (its instructions): make install-libero"
        )
    root = tmp_path_factory.mktemp(request.param)
    step, policy = job_checkpoint(root, config, overrides, sizes)
    out = root / "policy"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["--checkpoint", str(step), "--out", str(out)]) == 0
    return request.param, policy, out, printed.getvalue()


def test_export_takes_the_sizes_from_the_checkpoints_config(exported):
    import json

    job, _, out, printed = exported
    _, _, cameras, (state_dim, action_dim, chunk), task, prompt, prompts = JOBS[job]
    config = json.loads((out / "config.json").read_text())
    assert (config["state_dim"], config["action_dim"], config["num_action_chunks"]) == (
        state_dim,
        action_dim,
        chunk,
    )
    deploy = json.loads((out / "deploy.json").read_text())
    assert deploy["cameras"] == cameras and deploy["state_type"] == "proprio"
    assert (deploy["state_dim"], deploy["action_dim"], deploy["chunk_size"]) == (state_dim, action_dim, chunk)
    assert deploy["prompts"][task] == prompt and len(deploy["prompts"]) == prompts
    assert deploy["action_low"] == [-1.0] * action_dim and deploy["source"]["global_step"] == 5
    assert (
        f"cameras {cameras} at 64x64, state {state_dim}, {chunk} x {action_dim} actions per query" in printed
    )


def test_exported_policy_is_served_and_answers_openpi_client(exported):
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread
    from toolkits.deploy.served import ServedPolicy

    job, policy, out, _ = exported
    _, _, cameras, (state_dim, action_dim, chunk), task, prompt, _ = JOBS[job]
    served = ServedPolicy(out, seed=0)  # everything from deploy.json
    with ServerThread(PolicyServer(served, port=0)) as thread:
        client = WebsocketClientPolicy("127.0.0.1", thread.server.port)
        meta = client.get_server_metadata()
        assert meta["cameras"] == cameras
        assert meta["image_keys"] == ["observation/image", "observation/wrist_image"][: len(cameras)]
        assert (meta["state_dim"], meta["action_dim"], meta["chunk_size"]) == (state_dim, action_dim, chunk)
        assert meta["prompts"][task] == prompt
        rng = np.random.default_rng(1)
        obs = {key: rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for key in meta["image_keys"]}
        obs.update({"observation/state": rng.normal(size=state_dim).astype(np.float32), "prompt": task})
        actions = client.infer(obs)["actions"]
        assert actions.shape == (chunk, action_dim) and np.isfinite(actions).all()
        # the checkpoint's own policy answers the same from the same noise
        batch = served.parse(obs)
        expected = (
            policy.predict(batch, mode="eval", noise=served.observation_noise(batch)).actions[0].numpy()
        )
        np.testing.assert_allclose(actions, np.clip(expected, -1, 1), atol=1e-5)
        with pytest.raises(RuntimeError, match=rf"observation/state: expected shape \[{state_dim}\]"):
            client.infer({**obs, "observation/state": np.zeros(39, np.float32)})


def test_sizes_no_env_of_the_job_can_tell_are_one_line(tmp_path, capsys):
    """Imagination alone, its world model's folder gone: one line naming it, nothing written."""
    from toolkits.ckpt_convertor.export_policy import main

    overrides = ["env.train.dynamics_model_config=gone/model", "env.eval=null", "rollout.model_dir=null"]
    step, _ = job_checkpoint(tmp_path, "rl_release_video", overrides, (39, 4, 4))
    assert main(["--checkpoint", str(step), "--out", str(tmp_path / "policy")]) == 2
    assert capsys.readouterr().err == (
        f"error: {step / 'config.yaml'}: cannot tell the policy's state and action sizes: the job's envs are "
        "world models whose model folders are missing (gone/model); restore env.train.dynamics_model_config\n"
    )
    assert not (tmp_path / "policy").exists()
