"""Bad config inputs fail before any work with one clear line naming the key, the value and what is allowed.

The 112 bad inputs of ``BAD`` each do so in ``load_config`` and in the CLI (``python -m policy_and_value.train``,
what scripts/run_embodiment.sh runs), which ends with exit code 2 and that one line on stderr, before Ray starts.
"""

from pathlib import Path

import pytest

from policy_and_value.config import load_config
from toolkits.base.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
RESET_EPISODES = REPO / "assets" / "quickstart" / "reset_episodes"  # reach, drawer-close, button-press

BAD = [
    # (config, overrides, fragments the one-line message must contain)
    (
        "ppo_mlp_cartpole",
        ["actor.shard_optimizer=true"],
        ["actor.shard_optimizer=True", "the placement gives 1"],
    ),
    (
        "ppo_mlp_cartpole",
        ["rollout.weight_sync=nccl"],
        ["rollout.weight_sync", "collective", "object_store"],
    ),
    (
        "ppo_mlp_cartpole",
        ["actor.micro_batch_size=0"],
        ["actor.micro_batch_size=0", "greater than or equal to 1"],
    ),
    (
        "ppo_mlp_cartpole",
        ["actor.micro_batchsize=3"],
        ["actor.micro_batchsize", "unknown key", "micro_batch_size"],
    ),
    ("ppo_mlp_cartpole", ["runner.max_steps=abc"], ["runner.max_steps", "abc"]),
    (
        "ppo_cnn_metaworld",
        ["env.train.env_type=world_model"],
        ["env.train.dynamics_model_config=None", "needs a directory with config.json"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.env_type=world_model", "env.train.dynamics_model_config=/no/such/model"],
        ["env.train.dynamics_model_config=", "/no/such/model", "no config.json"],
    ),
    ("rl_release_video", ["env.train.reset_mode=middle"], ["env.train.reset_mode", "keyframe"]),
    (  # the env schema is one model per env_type: another simulator's key names the types that have it
        "ppo_cnn_metaworld",
        ["env.train.reset_mode=keyframe"],
        ["env.train.reset_mode='keyframe'", "applies to env_type world_model, not metaworld"],
    ),
    (
        "ppo_mlp_cartpole",
        ["env.train.cameras=[corner]"],
        ["applies to env_type metaworld, world_model, libero, maniskill, not gym"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.env_type=mujoco"],
        ["env.train.env_type='mujoco'", "allowed values: metaworld, gym"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.uncertainty_halt=0.5"],
        ["env.train.uncertainty_halt=0.5", "applies to env_type world_model, not metaworld"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.eval.reward_uncertainty_penalty=2"],
        ["env.eval.reward_uncertainty_penalty=2", "applies to env_type world_model, not metaworld"],
    ),
    (  # a group takes env.train's keys its own type has; a world-model key of its own on a real group is refused
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4,uncertainty_penalty:1}]"],
        ["env.train.groups[1].uncertainty_penalty=1", "applies to env_type world_model, not metaworld"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:2}]"],
        ["env.train.num_envs=8", "sum of the groups' num_envs (2)"],
    ),
    ("ppo_cnn_metaworld", ["env.train.groups=[{num_envs:8}]"], ["env.train.groups[0].name", "needs a name"]),
    (
        "ppo_cnn_metaworld",
        ["env.train.loss_weight=0.5"],
        ["env.train.loss_weight=0.5", "one env group's chunks", "env.train.groups[i]"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4,loss_weight:0},{name:b,num_envs:4,loss_weight:0}]"],
        ["env.train.groups[0].loss_weight=0.0", "at least one env group needs a positive loss_weight"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4,loss_weight:-1}]"],
        ["env.train.groups[1].loss_weight", "greater than or equal to 0"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4}]", "ablation.shuffle_advantages_of=[c]"],
        ["ablation.shuffle_advantages_of='c'", "names env groups: one of ['a', 'b']"],
    ),
    (
        "ppo_cnn_metaworld",
        [
            "env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4}]",
            "ablation.shuffle_advantages_of=[a]",
            "ablation.shuffle_advantages=true",
        ],
        ["ablation.shuffle_advantages_of=['a']", "one advantage ablation at a time"],
    ),
    (
        "ppo_cnn_metaworld",
        ["algorithm.normalize_advantages_by=env_group"],
        ["algorithm.normalize_advantages_by='env_group'", "needs env.train.groups"],
    ),
    (
        "ppo_cnn_metaworld",
        [
            "env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4}]",
            "algorithm.normalize_advantages=false",
            "algorithm.normalize_advantages_by=env_group",
        ],
        ["algorithm.normalize_advantages_by='env_group'", "needs algorithm.normalize_advantages true"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4},{name:a,num_envs:4}]"],
        ["env.train.groups[1].name='a'", "unique"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:8,auto_reset:false}]"],
        ["env.train.groups[0].auto_reset=False", "shared by all groups"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:8,camera:top}]"],
        ["env.train.groups[0].camera", "unknown env key"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:8,env_type:isaac}]"],
        ["env.train.groups[0].env_type='isaac'", "metaworld"],
    ),
    (
        "ppo_cnn_metaworld",
        ["env.train.groups=[{name:a,num_envs:4},{name:b,num_envs:4,env_type:world_model}]"],
        ["env.train.groups[1].dynamics_model_config=None"],
    ),
    ("ppo_mlp_cartpole", ["runner.max_steps=-2"], ["runner.max_steps=-2"]),
    (
        "ppo_gym_pendulum",
        ["model.policy_type=pi0", "model.add_value_head=true", "model.pi0.value_from_state=true"],
        ["model.pi0.value_from_state=True", "time_left", "gym"],
    ),
    ("rl_metaworld_dense_ppo", ["algorithm.critic_epochs=3"], ["algorithm.critic_epochs=3", "adv_type gae"]),
    (
        "rl_metaworld_dense_critic",
        ["model.pi0.value_after_vlm=true"],
        ["model.pi0.value_from_state=True", "set one"],
    ),
    ("ppo_mlp_cartpole", ["algorithm.gamma=1.5"], ["algorithm.gamma=1.5", "less than or equal to 1"]),
    ("ppo_mlp_cartpole", ["algorithm.adv_type=gea"], ["algorithm.adv_type", "gae", "grpo"]),
    ("ppo_mlp_cartpole", ["algorithm.reward_type=token"], ["algorithm.reward_type", "chunk_level"]),
    ("ppo_mlp_cartpole", ["algorithm.clip_ratio_low=1.2"], ["algorithm.clip_ratio_low=1.2"]),
    ("ppo_mlp_cartpole", ["algorithm.clip_ratio_c=0.5"], ["algorithm.clip_ratio_c=0.5", "greater than 1"]),
    ("ppo_mlp_cartpole", ["algorithm.advantage_scale=0"], ["algorithm.advantage_scale=0"]),
    ("ppo_mlp_cartpole", ["rollout.rollout_ema_decay=1.0"], ["rollout.rollout_ema_decay=1.0", "less than 1"]),
    ("ppo_mlp_cartpole", ["rollout.pipeline_stage_num=0"], ["rollout.pipeline_stage_num=0"]),
    ("ppo_mlp_cartpole", ["actor.optim.lr=-1"], ["actor.optim.lr=-1"]),
    ("ppo_mlp_cartpole", ["actor.optim.lr_scheduler=linear"], ["actor.optim.lr_scheduler", "cosine"]),
    ("ppo_mlp_cartpole", ["actor.optim.min_lr_ratio=2"], ["actor.optim.min_lr_ratio=2"]),
    ("ppo_mlp_cartpole", ["runner.logger.logger_backends=[tensorbord]"], ["logger_backends", "tensorboard"]),
    ("ppo_mlp_cartpole", ["runner.logger.mode=cloud"], ["runner.logger.mode", "offline"]),
    (
        "ppo_cnn_metaworld",
        ["env.train.task_weights=[1,2,3]"],
        ["env.train.task_weights", "one weight per task: 2"],
    ),
    ("ppo_cnn_metaworld", ["env.train.task_weights=[1,-1]"], ["env.train.task_weights", ">= 0"]),
    (
        "ppo_cnn_metaworld",
        ["env.train.task_weights=[20,1]", "env.train.num_envs=4"],
        ["env.train.task_weights", "4 task slots: push-v3 gets none", "raise env.train.num_envs"],
    ),
    ("ppo_mlp_cartpole", ["env.train.env_type=mujoco"], ["env.train.env_type", "metaworld", "gym"]),
    ("ppo_mlp_cartpole", ["env.train.tasks=[CartPole-v1,Pendulum-v1]"], ["env.train.tasks", "exactly one"]),
    ("ppo_mlp_cartpole", ["env.train.num_envs=0"], ["env.train.num_envs=0"]),
    ("ppo_mlp_cartpole", ["model.policy_type=transformer"], ["model.policy_type", "mlp_actor_critic"]),
    ("ppo_mlp_cartpole", ["model.hidden_dims=[]"], ["model.hidden_dims"]),
    (
        "ppo_pi0_metaworld",
        ["model.pi0.noise_methd=flow_sde"],
        ["model.pi0.noise_methd", "did you mean 'model.pi0.noise_method'"],
    ),
    (
        "ppo_pi0_metaworld",
        ["model.pi0.noise_method=gaussian"],
        ["model.pi0.noise_method='gaussian'", "flow_sde"],
    ),
    ("ppo_pi0_metaworld", ["model.pi0.preset=huge"], ["model.pi0.preset='huge'", "tiny"]),
    ("ppo_pi0_metaworld", ["model.pi0.num_steps=0"], ["model.pi0.num_steps=0", "must be >= 1"]),
    # nested pi0 keys by their full path, with the numbers involved
    ("rl_release_video", ["model.pi0.chunk_size=2"], ["model.pi0.chunk_size=2", "num_action_chunks=4"]),
    (
        "rl_release_video",
        ["model.pi0.noise_method=flow_xyz"],
        ["model.pi0.noise_method='flow_xyz'", "flow_ode"],
    ),
    # sizes that must agree between config, envs and the saved policy, before Ray starts
    (
        "rl_release_video",
        ["model.action_dim=7"],
        ["model.action_dim=7", "env.train (world_model) gives 4 actions"],
    ),
    (
        "rl_release_video",
        ["env.train.state_type=proprio"],
        ["env.eval.state_type='full'", "39-dim", "proprio a 4-dim"],
    ),
    (
        "rl_release_video",
        ["env.train.state_type=proprio", "env.eval.state_type=proprio"],
        ["rollout.model_dir=", "trained with state_dim=39", "gives 4"],
    ),  # fmt: skip
    # a placement override is the whole placement (Hydra would merge it into the config's)
    (
        "rl_release_video",
        ["cluster.component_placement={}"],
        ["cluster.component_placement={}", "no placement for env"],
    ),
    ("rl_release_video", ["cluster.component_placement={env: 0}"], ["no placement for rollout, actor"]),
    ("ppo_pi0_metaworld", ["rollout.model_dir=/tmp"], ["rollout.model_dir='/tmp'", "config.json"]),
    ("ppo_cnn_metaworld", ["+model.pi0.preset=tiny"], ["model.pi0", "only used with model.policy_type pi0"]),
    ("ppo_mlp_cartpole", ["cluster.num_nodes=0"], ["cluster.num_nodes=0"]),
    (
        "ppo_mlp_cartpole",
        ["cluster=separate", "cluster.component_placement.actor=5"],
        ["component_placement.actor='5'", "device 5 does not exist"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=separate", "cluster.component_placement.actor=0-"],
        ["component_placement.actor='0-'", "cannot parse"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=separate", "~cluster.component_placement.actor"],
        ["component_placement", "no placement for actor"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=separate", "+cluster.component_placement.learner=0"],
        ["unknown component 'learner'"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=separate", "cluster.num_devices_per_node=2"],
        ["component_placement.actor='2'", "device 2 does not exist"],
    ),
    (
        "ppo_mlp_cartpole",
        ["actor.global_batch_size=300"],
        ["actor.global_batch_size=300", "multiple of actor.micro_batch_size"],
    ),
    (
        "ppo_mlp_cartpole",
        ["actor.global_batch_size=384", "actor.micro_batch_size=128"],
        ["actor.global_batch_size=384", "must divide the 256 samples"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=partial_sharing", "actor.micro_batch_size=256"],
        ["actor.global_batch_size=256", "2"],
    ),
    (
        "ppo_mlp_cartpole",
        ["cluster=partial_sharing", "cluster.component_placement.env=0-1", "env.train.num_envs=7"],
        ["env.train.num_envs=7", "2 env ranks"],
    ),
    ("ppo_mlp_cartpole", ["rollout.pipeline_stage_num=3"], ["env.train.num_envs=8", "pipeline_stage_num=3"]),
    (
        "ppo_mlp_cartpole",
        [
            "cluster=partial_sharing",
            "cluster.component_placement.rollout=0-1",
            "rollout.pipeline_stage_num=1",
            "actor.micro_batch_size=128",
        ],
        ["rollout.pipeline_stage_num=1", "rollout ranks"],
    ),
    (
        "ppo_mlp_cartpole",
        ["algorithm.logprob_type=chunk_level", "algorithm.reward_type=action_level"],
        ["algorithm.logprob_type='chunk_level'", "reward_type=chunk_level"],
    ),
    ("ppo_mlp_cartpole", ["algorithm.adv_type=grpo"], ["algorithm.group_size=1", "group_size >= 2"]),
    (
        "ppo_mlp_cartpole",
        ["algorithm.adv_type=grpo", "algorithm.group_size=4"],
        ["env.train.group_size=1", "algorithm.group_size=4"],
    ),
    ("ppo_mlp_cartpole", ["model.add_value_head=false"], ["model.add_value_head=False", "value head"]),
    (
        "ppo_mlp_cartpole",
        ["runner.resume_dir=/nonexistent/global_step_3"],
        ["runner.resume_dir='/nonexistent/global_step_3'", "no such directory"],
    ),
    ("ppo_mlp_cartpole", ["rollout.model_dir=/nonexistent/model"], ["rollout.model_dir", "no such file"]),
    ("ppo_mlp_cartpole", ["~env.eval"], ["runner.val_check_interval=20", "env.eval"]),
    (
        "ppo_mlp_cartpole",
        ["env.eval.num_action_chunks=2"],
        ["env.eval.num_action_chunks=2", "env.train.num_action_chunks=1"],
    ),
    ("ppo_cnn_metaworld", ["env.train.tasks=[reach-v2]"], ["env.train.tasks='reach-v2'", "reach-v3"]),
    ("ppo_cnn_metaworld", ["env.train.cameras=[front]"], ["env.train.cameras='front'", "gripperPOV"]),
    ("ppo_cnn_metaworld", ["env.train.image_size=4"], ["env.train.image_size=4"]),
    ("grpo_cnn_metaworld", ["env.train.auto_reset=true"], ["env.train.auto_reset=True", "grpo"]),
    (
        "grpo_cnn_metaworld",
        ["env.train.use_fixed_reset_state_ids=false"],
        ["use_fixed_reset_state_ids", "grpo"],
    ),
    (
        "grpo_cnn_metaworld",
        ["cluster=partial_sharing", "env.train.num_envs=4"],
        ["algorithm.group_size=4", "2 env columns each of the 2 actor ranks"],
    ),
    ("no_such_config", [], ["CONFIG='no_such_config'", "ppo_mlp_cartpole"]),
    ("ppo_mlp_cartpole", ["algorithm.train_mode=IL"], ["algorithm.train_mode='IL'", "pi0 or pi05"]),
    (
        "ppo_pi0_metaworld",
        ["algorithm.train_mode=IL"],
        ["algorithm.train_mode='IL'", "with_advantage_condition"],
    ),
    ("ppo_pi0_metaworld", ["algorithm.train_mode=il"], ["algorithm.train_mode='il'", "RL or IL"]),
    ("ppo_pi0_metaworld", ["algorithm.offline_data_coef=-1"], ["algorithm.offline_data_coef=-1"]),
    (
        "rl_release_video",
        ["ablation.shuffle_advantages=true", "ablation.reverse_advantages=true"],
        ["ablation.reverse_advantages=True", "one advantage ablation at a time"],
    ),
    (
        "rl_release_video",
        ["algorithm.train_mode=IL", "algorithm.target_kl=0.05"],
        ["algorithm.target_kl=0.05", "RL"],
    ),
    (
        "rl_release_video",
        ["algorithm.train_mode=RL", "algorithm.imitation_min_advantage=0.5"],
        ["algorithm.imitation_min_advantage=0.5", "train_mode IL"],
    ),
    (
        "ppo_pi0_metaworld",
        ["algorithm.offline_data_coef=1.0"],
        ["algorithm.offline_data_coef=1.0", "needs algorithm.offline_data_path"],
    ),
    (
        "rl_metaworld_outcome",
        ["algorithm.imitation_min_advantage=null", "algorithm.imitation_replay_size=0"],
        ["algorithm.train_mode='IL'", "with_advantage_condition", "imitation_min_advantage"],
    ),
    (
        "rl_metaworld_outcome",
        ["algorithm.imitation_min_advantage=null"],
        ["algorithm.imitation_replay_size=4000", "needs algorithm.imitation_min_advantage"],
    ),
    (
        "rl_release_video",
        ["algorithm.drop_uniform_groups=true"],
        ["algorithm.drop_uniform_groups=True", "needs adv_type grpo, not gae"],
    ),
    (
        "rl_release_video",
        ["algorithm.grpo_return=to_go"],
        ["algorithm.grpo_return='to_go'", "needs adv_type grpo, not gae"],
    ),
    (
        "rl_release_video",
        ["env.train.reward_signal=success"],
        ["env.train.reward_signal='success'", "metaworld"],
    ),
    (
        "rl_metaworld_outcome",
        ["env.train.reward_signal=sparse"],
        ["env.train.reward_signal", "dense", "success"],
    ),
    ("rl_metaworld_outcome", ["env.eval.layout_seed=-1"], ["env.eval.layout_seed=-1"]),
    (
        "ppo_pi0_metaworld",
        ["algorithm.offline_data_coef=1.0", "algorithm.offline_data_path=/no/such/episodes"],
        ["algorithm.offline_data_path='/no/such/episodes'", "no index.json"],
    ),
    (
        "ppo_pi0_metaworld",
        ["algorithm.offline_data_coef=1.0", f"algorithm.offline_data_path={RESET_EPISODES}"],
        ["env.train.tasks=['reach-v3', 'push-v3']", "['push-v3'] not in the dataset"],
    ),
    (
        "ppo_pi0_metaworld",
        [
            "algorithm.offline_data_coef=1.0",
            f"algorithm.offline_data_path={RESET_EPISODES}",
            "env.train.tasks=[reach-v3]",
            "env.train.cameras=[topview]",
        ],
        ["algorithm.offline_data_path=", "records cameras ['corner', 'gripperPOV'], not ['topview']"],
    ),
    (
        "ppo_cnn_metaworld",
        ["algorithm.offline_data_coef=1.0", f"algorithm.offline_data_path={RESET_EPISODES}"],
        ["algorithm.offline_data_coef=1.0", "needs model.policy_type pi0 or pi05, not cnn_actor_critic"],
    ),
]


@pytest.mark.parametrize("name,overrides,fragments", BAD, ids=[" ".join(b[1]) or b[0] for b in BAD])
def test_bad_config_gives_one_clear_line(name, overrides, fragments):
    with pytest.raises(ConfigError) as e:
        load_config(name, overrides)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("config error: ")
    for f in fragments:
        assert f in msg, (f, msg)


@pytest.mark.parametrize("name,overrides,fragments", BAD, ids=[" ".join(b[1]) or b[0] for b in BAD])
def test_cli_ends_bad_input_with_exit_2_and_one_line_before_ray(name, overrides, fragments, capsys):
    import ray

    from policy_and_value.train import main

    if ray.is_initialized():  # the Ray earlier jobs of this test process shared (tests/runtime/jobs.py)
        ray.shutdown()
    assert main([name, *overrides]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("config error: ")
    assert not ray.is_initialized()


def test_docstring_counts_the_bad_inputs():
    assert f"The {len(BAD)} bad inputs of ``BAD``" in __doc__
