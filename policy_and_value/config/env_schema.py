"""The env part of the job schema, one model per ``env_type`` (a discriminated union): the keys every env has, the
camera keys of the simulators and the world model, then each simulator's own. A key of another env type is an
error that names the types it belongs to."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, ValidationError

from toolkits.base.errors import ConfigError, format_validation_error
from toolkits.base.schema import Strict

ENV_TYPES = ("metaworld", "gym", "world_model", "libero", "maniskill")


class VideoConfig(Strict):
    save_video: bool = False
    video_base_dir: str | None = None  # default: <log_dir>/videos/<split>
    fps: int = Field(10, ge=1)
    info_overlay: bool = True
    max_envs: int = Field(4, ge=1)  # record at most this many envs (eval: one episode each per evaluation)


class EnvConfig(Strict):
    """The keys every env type has; ``env_type`` picks the model with the rest (``ENV_MODELS``)."""

    env_type: Literal["metaworld", "gym", "world_model", "libero", "maniskill"] = "metaworld"
    # metaworld: MT10/MT50 task names (e.g. "reach-v3"); gym: exactly one gymnasium id; libero: task names
    # of env.suite (e.g. "pick_up_the_alphabet_soup_and_place_it_in_the_basket"); maniskill: PickCube-v1,
    # PushCube-v1, StackCube-v1; world_model: the tasks of its reset episodes
    tasks: list[str] = Field(default_factory=lambda: ["reach-v3"], min_length=1)
    # share of the env groups (so of the samples) each task gets, one weight per task; None: equal shares
    task_weights: list[float] | None = None
    num_envs: int = Field(4, ge=1)  # total over all env ranks
    num_action_chunks: int = Field(1, ge=1)  # actions per chunk_step
    max_episode_steps: int = Field(100, ge=1)  # in env steps (actions)
    auto_reset: bool = True
    ignore_terminations: bool = False
    use_fixed_reset_state_ids: bool = False
    group_size: int = Field(1, ge=1)
    reward_scale: float = 1.0
    video_cfg: VideoConfig = Field(default_factory=VideoConfig)
    # several env groups in one env (e.g. the world model and Meta-World): each item has a ``name``, its
    # share ``num_envs`` (the shares add up to num_envs), its ``env_type`` if another, and any keys that differ
    # from this config's; a group takes from this config the keys its own env type has
    groups: list[dict[str, Any]] = Field(default_factory=list)
    # an env group's own key: what each of its chunks weighs in the RL policy and value losses against the
    # other groups' (1: every chunk alike; 0.25: a quarter of a chunk; 0: its rollouts train nothing)
    loss_weight: float = Field(1.0, ge=0.0)

    @classmethod
    def unknown_key_hint(cls, key: str) -> str | None:
        """For an unknown ``key`` that another env type has: which types have it (else None)."""
        owners = [t for t, model in ENV_MODELS.items() if key in model.model_fields]
        if not owners:
            return None
        this = cls.model_fields["env_type"].default
        return f"applies to env_type {', '.join(owners)}, not {this}"


class GymEnvConfig(EnvConfig):
    """A gymnasium task with vector observations (exactly one id in ``tasks``)."""

    env_type: Literal["gym"] = "gym"


class LearnedRewardConfig(Strict):
    """A dense reward from what the cameras and the proprioception show, as a robot can have one: each chunk's last
    reward gains ``coef`` x the change over the chunk of an observation model's value head (its members' mean less
    ``uncertainty_penalty`` x their std) on the observed frames, encoded by the VAE of ``vae``."""

    model: str  # an observation model directory with a value head (world_models.train_state_model model.value_head)
    vae: str = "assets/world_models/tiny_3tasks"  # the dynamics model whose VAE the observation model read
    coef: float = Field(1.0, gt=0.0)
    uncertainty_penalty: float = Field(0.0, ge=0.0)


class CameraEnvConfig(EnvConfig):
    """What the policy of a camera env sees: its views, their size, and the state vector beside them."""

    cameras: list[str] = Field(default_factory=lambda: ["corner"], min_length=1)
    image_size: int = Field(64, ge=8, le=1024)
    use_images: bool = True
    state_type: Literal["full", "proprio"] = "full"  # metaworld: 39-dim obs or hand xyz + gripper
    # a simulator's training env only: the value of an observation model added to its reward (None: its own reward)
    learned_reward: LearnedRewardConfig | None = None


class MetaWorldEnvConfig(CameraEnvConfig):
    """Meta-World (MuJoCo): MT50 tasks on layouts drawn from ``layout_seed``."""

    env_type: Literal["metaworld"] = "metaworld"
    # the seed of the 50 layouts (goal/object positions) per task that resets draw from; evaluating with
    # another seed measures success on layouts never trained on
    layout_seed: int = Field(0, ge=0)
    # "dense" is Meta-World's shaped reward each step; "success" gives 1 at the step an episode first succeeds
    # and 0 otherwise, so an episode's return is its outcome
    reward_signal: Literal["dense", "success"] = "dense"


class LiberoEnvConfig(CameraEnvConfig):
    """LIBERO (robosuite): a suite's tasks, their init states; proprio state and success rewards only."""

    env_type: Literal["libero"] = "libero"
    suite: str = "libero_object"  # libero_spatial, libero_object, libero_goal, libero_10 or libero_90
    state_type: Literal["full", "proprio"] = "proprio"  # LIBERO gives proprio (8 numbers)
    reward_signal: Literal["dense", "success"] = "success"  # LIBERO rewards success only
    # which of the 50 init states a task ships resets draw from: all (LIBERO's evaluation), the first 25 (train) or
    # the last 25 (heldout): training on one half and evaluating on the other measures layouts never trained on
    start_states: Literal["all", "train", "heldout"] = "all"


class ManiSkillEnvConfig(CameraEnvConfig):
    """ManiSkill3 (SAPIEN): PickCube, PushCube, StackCube with proprio state."""

    env_type: Literal["maniskill"] = "maniskill"
    # cpu (one simulated scene per env, stepped here) or gpu (each task's envs as one GPU-simulated ManiSkill
    # env; needs CUDA)
    sim_backend: Literal["cpu", "gpu"] = "cpu"
    state_type: Literal["full", "proprio"] = "proprio"  # ManiSkill gives proprio (8 numbers)
    layout_seed: int = Field(0, ge=0)  # the seed of the initial scenes resets draw from
    reward_signal: Literal["dense", "success"] = "dense"  # ManiSkill's normalised dense reward, or success


class WorldModelEnvConfig(CameraEnvConfig):
    """A learned dynamics model (and reward or state model) standing in for the simulator."""

    env_type: Literal["world_model"] = "world_model"
    dynamics_model_config: str | None = None  # dynamics model directory (config.json + model.safetensors)
    dynamics_model_image_root: str | None = None  # episodes (toolkits.collect_episodes) to reset from
    dynamics_model_output_path: str | None = None  # visualize_wm_pred videos; default <log_dir>/wm_pred
    reset_mode: Literal["episode_start", "keyframe"] = (
        "episode_start"  # keyframe: random frames along episodes
    )
    num_inference_steps: int | None = Field(None, ge=1)  # None: the dynamics model's own
    dynamics_model_dtype: Literal["float32", "bfloat16", "float16"] | None = None  # None: the model's own
    stochastic_imagination: bool = (
        False  # False: imagination is a deterministic function of the seed and state
    )
    reward_model_config: str | None = None  # reward model directory (config.json + model.safetensors)
    reward_model_ckpt: str | None = None  # optional weights file replacing the directory's model.safetensors
    chunk_reward: bool = True  # reward of the chunk = the last predicted frame's score
    # when chunk_reward is false; success: reward_coef at the first frame reaching success_threshold, else 0;
    # state_reward: reward_coef x the state model's reward head on the state after each action (needs a
    # state_model_config trained with model.reward_head); value: success's reward plus, on each chunk's last action,
    # the change over the chunk of the state model's value head (a potential learned from the episodes' outcomes,
    # model.value_head: a dense reward from what a robot records)
    reward_mode: Literal["per_frame", "relative", "v1", "v2", "success", "state_reward", "value"] = (
        "per_frame"
    )
    reward_coef: float = 1.0
    success_threshold: float = Field(0.9, gt=0.0, le=1.0)  # progress that counts as success (terminates)
    # state model directory (python -m world_models.train_state_model): its ensemble predicts the state the
    # policy sees after each chunk (instead of the dynamics model's state head)
    state_model_config: str | None = None
    # what scores imagined progress: the reward model on the imagined frames, or the state model's success
    # classifier on the imagined states (needs state_model_config)
    outcome_source: Literal["frames", "state"] = "frames"
    # where the imagined frames come from: the dynamics model's denoiser (from the frames before); the state
    # model's renderer (the frame each imagined state shows, decoded by the dynamics model's VAE); or
    # state_residual: the real start frame's VAE latents plus the rendered change since the start state
    frames_from: Literal["dynamics", "state", "state_residual"] = "dynamics"
    # an observation model only: after each chunk its members' code is re-read from the frame they show (the decoded
    # frame through the VAE's encoder and the model's), so the model goes on from what the policy sees instead of
    # from a code that drifts off the real frames' codes over 25-50 chunks
    reobserve_frames: bool = False
    # hallucination filtering (need state_model_config): each chunk's reward minus this x the ensemble's
    # disagreement (MOPO), and imagined episodes truncated once the disagreement exceeds uncertainty_halt
    uncertainty_penalty: float = Field(0.0, ge=0.0)
    uncertainty_halt: float | None = Field(None, gt=0.0)
    # with reward_mode state_reward: each reward is the members' mean reward head less this x their std (a
    # pessimistic reward where the heads disagree, against the policy exploiting one head's errors); with value, the
    # same of the value heads
    reward_uncertainty_penalty: float = Field(0.0, ge=0.0)
    # with outcome_source state: each imagined success score is the members' mean success probability less this x
    # their std (a pessimistic success where the heads disagree; an observation model's only reward)
    success_uncertainty_penalty: float = Field(0.0, ge=0.0)
    visualize_wm_pred: bool = False


ENV_MODELS: dict[str, type[EnvConfig]] = {
    "metaworld": MetaWorldEnvConfig,
    "gym": GymEnvConfig,
    "world_model": WorldModelEnvConfig,
    "libero": LiberoEnvConfig,
    "maniskill": ManiSkillEnvConfig,
}
ENV_KEYS = frozenset(k for model in ENV_MODELS.values() for k in model.model_fields)  # any env type's keys


def _env_type(value: Any) -> str:
    """The union's tag: a dict's or model's ``env_type`` (metaworld when absent; an unknown one is its own tag,
    which pydantic then refuses naming the allowed types)."""
    env_type = (
        value.get("env_type", "metaworld") if isinstance(value, dict) else getattr(value, "env_type", None)
    )
    return env_type if isinstance(env_type, str) else "metaworld"


AnyEnvConfig = Annotated[
    Annotated[MetaWorldEnvConfig, Tag("metaworld")]
    | Annotated[GymEnvConfig, Tag("gym")]
    | Annotated[WorldModelEnvConfig, Tag("world_model")]
    | Annotated[LiberoEnvConfig, Tag("libero")]
    | Annotated[ManiSkillEnvConfig, Tag("maniskill")],
    Discriminator(_env_type),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEnvConfig)


def env_config(**keys: Any) -> Any:
    """The env config of ``keys``' ``env_type`` (metaworld when absent), validated: e.g. a copy with another type."""
    return _ADAPTER.validate_python(keys)


class _OneEnv(Strict):
    """One env config at ``env``: what an error line of a lone env config is read against."""

    env: AnyEnvConfig


def validate_env(data: dict[str, Any], key: str = "") -> Any:
    """``data`` as the env config of its ``env_type``; an invalid one is a ``ConfigError`` line naming
    ``key.<field>`` (``<field>`` alone when ``key`` is empty)."""
    try:
        return _OneEnv.model_validate({"env": data}).env
    except ValidationError as err:
        line = format_validation_error(err, {"env": data}, _OneEnv)
        raise ConfigError(
            line.replace("config error: env.", f"config error: {key}." if key else "config error: ", 1)
        ) from None


def derived_keys(base: EnvConfig, keys: dict[str, Any]) -> dict[str, Any]:
    """The keys of an env made from ``base`` (an env group, or a copy with another ``env_type``): those of ``base``
    its env type has, then ``keys`` (a group's ``name`` aside)."""
    own = {k: v for k, v in keys.items() if k != "name"}
    model = ENV_MODELS.get(own.get("env_type", base.env_type), type(base))
    inherited = {k: v for k, v in base.model_dump(exclude={"groups"}).items() if k in model.model_fields}
    return {**inherited, "env_type": model.model_fields["env_type"].default, **own}


def derive_env(base: EnvConfig, keys: dict[str, Any]) -> Any:
    """The env config ``derived_keys`` gives, validated."""
    return env_config(**derived_keys(base, keys))
