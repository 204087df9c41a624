"""The policies shipped under assets/ are complete policy directories: each has the deploy.json that
``python -m toolkits.deploy.spec`` writes (listed in its folder's SHA256SUMS) and is served as it is, with no
``--cameras``, answering openpi's client."""

import json

import numpy as np
import pytest

from tests.assets import REPO, assert_matches_sha256sums
from tests.deploy.conftest import NO_OPENPI_CLIENT

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402

SHIPPED = ["quickstart", "metaworld_outcome", "metaworld_outcome20", "metaworld_outcome20_both"]


@pytest.mark.parametrize("name", SHIPPED)
def test_deploy_json_is_what_the_spec_command_writes_and_is_checksummed(name):
    from policy_and_value.models.pi0 import Pi0Config
    from toolkits.deploy.spec import load_env_config, spec_for_env

    root = REPO / "assets" / name
    assert "policy/deploy.json" in (root / "SHA256SUMS").read_text()
    assert_matches_sha256sums(root)
    shipped = json.loads((root / "policy" / "deploy.json").read_text())
    source = shipped["source"]
    assert source["written_by"] == "toolkits.deploy.spec"
    env = load_env_config(source["env"], source["overrides"])
    rebuilt = spec_for_env(Pi0Config.load(root / "policy" / "config.json"), env, source=source)
    assert rebuilt.to_dict() == shipped
    assert shipped["cameras"] == ["corner", "gripperPOV"] and shipped["image_size"] == 64
    assert (shipped["state_dim"], shipped["action_dim"], shipped["chunk_size"]) == (39, 4, 4)
    assert shipped["state_type"] == "full" and shipped["max_episode_steps"] == 150
    tasks = ["reach-v3", "drawer-close-v3", "button-press-topdown-v3"] if name == "quickstart" else [
        "reach-v3", "button-press-topdown-v3", "door-open-v3"]  # fmt: skip
    assert list(shipped["prompts"]) == tasks and shipped["prompts"]["reach-v3"] == "reach the goal position"


def test_the_spec_command_writes_deploy_json_and_names_a_bad_env_in_one_line(tmp_path, capsys):
    import shutil

    from toolkits.deploy.spec import main

    policy = tmp_path / "policy"
    src = REPO / "assets" / "metaworld_outcome" / "policy"
    shutil.copytree(src, policy, ignore=shutil.ignore_patterns("deploy.json"))
    tasks = "tasks=[reach-v3,button-press-topdown-v3,door-open-v3]"
    assert main(["--policy-dir", str(policy), "--env", "metaworld_3tasks", tasks]) == 0
    assert (policy / "deploy.json").read_bytes() == (src / "deploy.json").read_bytes()
    assert capsys.readouterr().out.startswith(
        f"wrote {policy / 'deploy.json'}: cameras ['corner', 'gripperPOV']"
    )
    for args, line in [
        (["--env", "libero_object_3tasks"],
         "--env='libero_object_3tasks': the policy has action_dim=4, a libero env with state_type=proprio gives 7"),
        (["--env", "metaworld_3tasks", "tasks=[rech-v3]"],
         "--env='metaworld_3tasks': 'rech-v3' is not a metaworld task; did you mean 'reach-v3'?"),
        (["--env", "world_model_3tasks"], "env_type='world_model': a robot stands in for a simulator"),
        (["--env", "nothing"], "--env='nothing': no such env config; allowed: "),
    ]:  # fmt: skip
        assert main(["--policy-dir", str(policy), *args]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith(f"config error: {line}"), err


@pytest.fixture(scope="module")
def servers():
    """Each shipped policy directory behind a server, loaded as it is (no cameras or tasks given)."""
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread
    from toolkits.deploy.served import ServedPolicy

    threads = {name: ServerThread(PolicyServer(ServedPolicy(REPO / "assets" / name / "policy", seed=0), port=0))
               for name in SHIPPED}  # fmt: skip
    for thread in threads.values():
        thread.start()
    yield threads
    for thread in threads.values():
        thread.stop()


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_policy_is_served_as_it_is_and_answers_openpi_client(servers, name):
    client = WebsocketClientPolicy("127.0.0.1", servers[name].server.port)
    meta = client.get_server_metadata()
    assert meta["cameras"] == ["corner", "gripperPOV"] and meta["state_dim"] == 39
    assert meta["image_keys"] == ["observation/image", "observation/wrist_image"]
    assert (meta["action_dim"], meta["chunk_size"]) == (4, 4) and "reach-v3" in meta["prompts"]
    rng = np.random.default_rng(0)
    obs = {
        "observation/image": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8),
        "observation/wrist_image": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8),
        "observation/state": rng.normal(size=39).astype(np.float32),
        "prompt": "reach-v3",
    }
    actions = client.infer(obs)["actions"]
    assert actions.shape == (4, 4) and actions.dtype == np.float32
    assert np.isfinite(actions).all() and np.abs(actions).max() <= 1.0
    client._ws.close()
