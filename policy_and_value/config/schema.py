"""Typed schema of a worldrl job config.

Hydra composes YAML files into one tree; ``validate_config`` (in ``config/validate.py``) checks that tree
against these models before anything heavy starts, so a typo or an impossible value fails in a second
with one line naming the key. Every model forbids unknown keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from policy_and_value.config.env_schema import (  # noqa: F401 - the env schema is part of the job's
    ENV_MODELS,
    AnyEnvConfig,
    CameraEnvConfig,
    EnvConfig,
    GymEnvConfig,
    LiberoEnvConfig,
    ManiSkillEnvConfig,
    MetaWorldEnvConfig,
    VideoConfig,
    WorldModelEnvConfig,
    env_config,
)
from toolkits.base.schema import Strict
from toolkits.base.setting import Setting


# ----------------------------------------------------------------------------------------- cluster
class ClusterConfig(Strict):
    num_nodes: int = Field(1, ge=1)
    # with RAY_ADDRESS set (a running cluster), how long start-up waits for num_nodes nodes to join
    node_timeout_s: float = Field(300.0, ge=0.0)
    # CPU slots per node when no GPU is present (ignored when GPUs are: then it is the GPU count).
    num_devices_per_node: int = Field(1, ge=1)
    # component name(s) -> placement string, e.g. {"env,rollout": "0", "actor": "0-1"}.
    component_placement: dict[str, str | int] = Field(default_factory=lambda: {"env,rollout,actor": "all"})


# ------------------------------------------------------------------------------------------ runner
class LoggerConfig(Strict):
    log_path: str = "logs"
    project_name: str = "worldrl"
    experiment_name: str = "default"
    logger_backends: list[Literal["tensorboard", "wandb", "swanlab"]] = Field(
        default_factory=lambda: ["tensorboard"]
    )
    mode: Literal["online", "offline"] = "online"  # wandb/swanlab: offline keeps the run in the log dir


class RunnerConfig(Strict):
    max_steps: int = Field(10, ge=1)  # training steps (one step = rollout + update)
    val_check_interval: int = Field(-1, ge=-1)  # -1: never evaluate
    save_interval: int = Field(-1, ge=-1)  # -1: never save
    resume_dir: str | None = None  # a .../checkpoints/global_step_N directory
    seed: int = 1
    progress_bar: bool = True
    logger: LoggerConfig = Field(default_factory=LoggerConfig)


# --------------------------------------------------------------------------------------- algorithm
class AlgorithmConfig(Strict):
    # RL: PPO on the recorded chunks; IL: advantage-conditioned imitation of them (RISE's released
    # recipe: flow matching on the executed chunk with the prompt "Advantage: <bin of its advantage>")
    train_mode: Literal["RL", "IL"] = "RL"
    advantage_dropout: float = Field(
        0.1, ge=0.0, le=1.0
    )  # IL: share of samples with no advantage in the prompt
    # recorded episodes (toolkits.collect_episodes, optionally labelled by reward_models.label) that
    # anchor the policy: each micro batch adds offline_data_coef x the flow-matching loss on as many
    # offline chunks (IL: RISE's data balance, offline share coef/(1+coef); RL: a BC term next to PPO)
    offline_data_path: str | None = None
    offline_data_coef: float = Field(0.0, ge=0.0)  # 0 disables; > 0 needs offline_data_path and pi0/pi05
    # IL: chunks whose advantage (normalised, scaled) is below this are left out of the imitation loss
    # (filtered behaviour cloning: only the better samples are imitated, so the update selects rather
    # than only relabels); None imitates every chunk with its bin (RISE)
    imitation_min_advantage: float | None = None
    # IL with imitation_min_advantage: keep the chunks selected in past steps (at most this many, first in
    # first out) and add imitation_replay_coef x the flow-matching loss on as many of them to every micro
    # batch (self-imitation replay: the policy's past successes become demonstrations); 0 disables
    imitation_replay_size: int = Field(0, ge=0)
    imitation_replay_coef: float = Field(1.0, ge=0.0)
    # GRPO dynamic sampling: groups whose episodes all returned the same (all succeeded, or all failed)
    # carry no signal and are left out of the loss; rollout/mixed_group_fraction logs the share kept
    drop_uniform_groups: bool = False
    adv_type: Literal["gae", "grpo"] = "gae"
    # GRPO: what a chunk is credited with. episode: its episode's return, the same for every chunk (GRPO);
    # to_go: the return from that chunk on, centred on the group's at the same chunk index (with a
    # dense reward a chunk is no longer credited with the progress made before it); step: its own reward, centred
    # the same way (with a potential's change as reward, e.g. reward_mode value: what the chunk itself gained)
    grpo_return: Literal["episode", "to_go", "step"] = "episode"
    loss_type: Literal["ppo"] = "ppo"
    reward_type: Literal["chunk_level", "action_level"] = "chunk_level"
    logprob_type: Literal["chunk_level", "action_level", "token_level"] = "action_level"
    n_chunk_steps: int = Field(8, ge=1)  # chunks each env steps per rollout
    rollout_epoch: int = Field(1, ge=1)  # rollouts collected per training step
    gamma: float = Field(0.99, ge=0.0, le=1.0)
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    normalize_advantages: bool = True
    # what the advantages are whitened over: the whole batch, or each env group of a mixed env on its own
    # (imagined and real chunks each at mean 0, std 1, so neither group's reward scale sets the other's)
    normalize_advantages_by: Literal["batch", "env_group"] = "batch"
    advantage_scale: float = Field(1.0, gt=0.0)
    # pi0/pi05: the policy preset the job is meant for (tiny, tiny_pi05, pi0, pi05); checked against
    # model.pi0.preset and against the architecture saved in rollout.model_dir
    policy_config_name: str | None = None
    group_size: int = Field(1, ge=1)  # GRPO: envs sharing one reset state
    # RLinf/RISE: env groups (of group_size envs) per env rank and pipeline stage; when set it fixes
    # env.train.num_envs = num_group_envs x group_size x env ranks x pipeline_stage_num
    num_group_envs: int | None = Field(None, ge=1)
    update_epoch: int = Field(1, ge=1)
    # the first training steps update only the critic (a fresh value head on an imitation checkpoint
    # otherwise gives advantages that say nothing about the actions)
    critic_warmup_steps: int = Field(0, ge=0)
    # after the update, extra passes over the step's chunks (minibatches of actor.micro_batch_size) that fit
    # only the critic to the step's returns: a fresh value head needs hundreds of steps, not update_epoch's few
    critic_epochs: int = Field(0, ge=0)
    clip_ratio_low: float = Field(0.2, ge=0.0, lt=1.0)
    clip_ratio_high: float = Field(0.2, ge=0.0)
    clip_ratio_c: float | None = Field(None, gt=1.0)  # dual clip; None disables
    value_clip: float | None = Field(0.2, gt=0.0)  # None disables value clipping
    huber_delta: float | None = Field(10.0, gt=0.0)  # None: squared error
    value_loss_coef: float = Field(0.5, ge=0.0)
    entropy_bonus: float = Field(0.0, ge=0.0)
    # PPO: skip the rest of a training step's minibatches once one's approx. KL to the rollout policy exceeds this
    target_kl: float | None = Field(None, gt=0.0)


# ---------------------------------------------------------------------------------------------- ablation
class AblationConfig(Strict):
    """The controls a learning claim stands beside: the same advantages with their link to the chunks cut or
    turned round, so what remains of a gain is not the advantages' doing. At most one is on."""

    # permute the advantages among this rank's chunks after normalising (same distribution,
    # no link to what each chunk did): what remains of a gain is not the advantages' doing
    shuffle_advantages: bool = False
    # the same ablation on some env groups of a mixed env only (their names): e.g. [imagined] keeps the real
    # chunks' advantages and hands the imagined ones' to random imagined chunks, so what imagination adds
    # over its own extra updates shows
    shuffle_advantages_of: list[str] = Field(default_factory=list)
    # negate the advantages after normalising (the update favours what imagination scored
    # worse); against the true advantages this doubles what they contribute, so a small effect shows
    reverse_advantages: bool = False


# --------------------------------------------------------------------------------------------- env
class EnvGroupConfig(Strict):
    enable_offload: bool = False
    train: AnyEnvConfig = Field(default_factory=MetaWorldEnvConfig)
    eval: AnyEnvConfig | None = None
    eval_episodes: int = Field(8, ge=1)  # episodes per eval, over all eval envs


# ------------------------------------------------------------------------------------------ policy
class ModelConfig(Strict):
    """Policy config; ``policy_type`` picks the class from the policy registry."""

    policy_type: Literal["mlp_actor_critic", "cnn_actor_critic", "pi0", "pi05"] = "cnn_actor_critic"
    action_dim: int | None = Field(None, ge=1)  # None: taken from the env
    num_action_chunks: int | None = Field(None, ge=1)  # None: taken from env.train
    hidden_dims: list[int] = Field(default_factory=lambda: [64, 64], min_length=1)
    activation: Literal["tanh", "relu", "gelu"] = "tanh"
    image_channels: list[int] = Field(default_factory=lambda: [16, 32])  # CNN encoder widths
    init_log_std: float = Field(-0.5, ge=-5.0, le=2.0)
    obs_norm: bool = False  # running mean/std of the state vector
    add_value_head: bool = True
    # pi0/pi05 only: ``preset`` (tiny, tiny_pi05, pi0, pi05) plus any Pi0Config field, e.g.
    # noise_method, noise_level, num_steps, joint_logprob, value_after_vlm, train_expert_only, is_lora
    pi0: dict[str, Any] = Field(default_factory=dict)


# ----------------------------------------------------------------------------------------- workers
class RolloutConfig(Strict):
    pipeline_stage_num: int = Field(1, ge=1)
    # generate step t+1's rollouts while the actor trains on step t's (one step off-policy: the PPO ratio
    # and IL use the behaviour log-probs recorded at rollout); needs rollout and actor on separate devices
    overlap_training: bool = False
    # actor rank 0 -> rollout ranks: "collective" broadcasts over a gloo group of their own (multi-GB models
    # never pass through Ray's object store); "object_store" hands a state dict through Ray
    weight_sync: Literal["collective", "object_store"] = "collective"
    rollout_ema_decay: float = Field(0.0, ge=0.0, lt=1.0)
    enable_offload: bool = False
    model_dir: str | None = None  # initial policy weights


class OptimConfig(Strict):
    lr: float = Field(3e-4, gt=0.0)
    value_lr: float | None = Field(None, gt=0.0)  # None: same as lr
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = Field(1e-5, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    clip_grad: float | None = Field(1.0, gt=0.0)
    # clip the value head's gradient norm (to clip_grad) apart from the policy's: a critic's large early
    # loss then cannot shrink the policy's step under one shared clip
    clip_critic_apart: bool = False
    lr_scheduler: Literal["constant", "cosine"] = "constant"
    lr_warmup_steps: int = Field(0, ge=0)  # optimizer steps
    min_lr_ratio: float = Field(0.0, ge=0.0, le=1.0)
    total_training_steps: int | None = Field(None, ge=1)  # optimizer steps; None: derived


class ActorConfig(Strict):
    micro_batch_size: int = Field(32, ge=1)  # samples per forward/backward on one rank
    global_batch_size: int = Field(128, ge=1)  # samples per optimizer step over all ranks
    enable_offload: bool = False
    # each actor rank keeps AdamW's state for its share of the parameters only (torch's
    # ZeroRedundancyOptimizer); needs at least two actor ranks; checkpoints then hold one file per rank
    shard_optimizer: bool = False
    optim: OptimConfig = Field(default_factory=OptimConfig)
    backend: Literal["auto", "gloo", "nccl"] = "auto"


class CoevolutionConfig(Strict):
    """World-model/policy co-evolution (``policy_and_value.runner.coevolution``): rounds of RL in imagination,
    real rollouts of the current policy and/or its imagined plans replayed in the eval env's simulator (Meta-World or
    LIBERO), and a warm-started refit of the state model on every real episode."""

    rounds: int = Field(0, ge=0)  # 0: off (one plain run of runner.max_steps)
    steps_per_round: int = Field(10, ge=1)  # RL steps in imagination per round
    real_episodes_per_task: int = Field(4, ge=0)  # real rollouts of the current policy per task and round
    plans_per_task: int = Field(
        0, ge=0
    )  # its episodes imagined in the round's world model, replayed in the simulator
    layout_seed: int = Field(
        0, ge=0
    )  # Meta-World: the layouts the real rollouts draw from (training's; LIBERO's: its first 25 init states)
    state_model_data: str | None = (
        None  # the episodes the state model was trained on; refits add each round's
    )
    refit_steps: int = Field(300, ge=1)  # state-model (and renderer) training steps per refit, warm-started
    # the share of each refit batch of the state model drawn from the rounds' episodes (0: uniform over all its
    # data, where a round's 12 rollouts are 2% of state_model_data's 540 episodes); the renderer stays uniform
    refit_focus: float = Field(0.0, ge=0.0, lt=1.0)
    # the renderer's cache of VAE latents (null: <log_dir>/coevolution/latent_cache); one folder shared by runs on
    # the same data (seeds, arms) encodes its episodes once, where each run would spend its first refit on them
    latent_cache: str | None = None
    dynamics_refit_steps: int = Field(0, ge=0)  # > 0: also fine-tune the dynamics model's denoiser per round


class JobConfig(Strict):
    """The whole job."""

    # what the job may read: privileged (a simulator's state and shaped reward too) or observation_only (what a
    # robot records: frames, proprioception, actions, the instruction, the episode's success); checked before start
    setting: Setting = "privileged"
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    ablation: AblationConfig = Field(default_factory=AblationConfig)
    env: EnvGroupConfig = Field(default_factory=EnvGroupConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    actor: ActorConfig = Field(default_factory=ActorConfig)
    coevolution: CoevolutionConfig = Field(default_factory=CoevolutionConfig)
