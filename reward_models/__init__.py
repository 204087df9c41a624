"""Reward models: progress/value models and success classifiers that score frames, their training,
frame and advantage labelling, and the reward modes of the world-model env."""

from reward_models.configuration import RewardModelConfig
from reward_models.modeling import FrameScorer
from reward_models.rewards import REWARD_MODES, rewards_from_progress

__all__ = ["REWARD_MODES", "FrameScorer", "RewardModelConfig", "rewards_from_progress"]
