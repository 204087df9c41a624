"""A policy directory behind one call: a robot's observation (openpi's keys) in, an action chunk out.

Observation keys default to openpi's (``observation/image``, ``observation/wrist_image``,
``observation/state``, ``prompt``); the image keys map onto the policy's cameras in order. Images may be
HWC or CHW, uint8 (0..255) or float (0..1), any size: they are resized with padding (black) to the
policy's square input, as openpi does. The prompt is an instruction, or a task name the policy knows.
The answer is ``{"actions": float32 [chunk_size, action_dim]}`` in env units (un-normalised, clipped to
the action bounds when ``deploy.json`` has them). Every problem with a request is a ``BadRequest``
whose one-line message names the key, the value and what is allowed.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from toolkits.deploy.spec import DeploySpec, spec_for_policy_dir

DEFAULT_IMAGE_KEYS = ("observation/image", "observation/wrist_image")
DEFAULT_STATE_KEY = "observation/state"
DEFAULT_PROMPT_KEY = "prompt"
MAX_IMAGE_SIDE = 4096
MAX_PROMPT_CHARS = 2000


class BadRequest(ValueError):
    """A request the policy cannot act on; the message goes back to the client as is."""


@dataclass
class ObservationKeys:
    """Which request keys carry each camera's image (in the policy's camera order), the state and the prompt."""

    images: list[str]
    state: str = DEFAULT_STATE_KEY
    prompt: str = DEFAULT_PROMPT_KEY

    @classmethod
    def for_cameras(
        cls,
        num_cameras: int,
        images: Sequence[str] | None = None,
        state: str | None = None,
        prompt: str | None = None,
    ) -> ObservationKeys:
        """Keys for a policy with ``num_cameras`` views; openpi's defaults cover up to two cameras."""
        if images is None:
            if num_cameras > len(DEFAULT_IMAGE_KEYS):
                raise ValueError(
                    f"the policy reads {num_cameras} cameras; pass --image-keys with {num_cameras} keys "
                    f"(the default {list(DEFAULT_IMAGE_KEYS)} covers at most {len(DEFAULT_IMAGE_KEYS)})"
                )
            images = DEFAULT_IMAGE_KEYS[:num_cameras]
        if len(images) != num_cameras:
            raise ValueError(
                f"--image-keys={list(images)}: the policy reads {num_cameras} cameras, one key per camera"
            )
        keys = cls(list(images), state or DEFAULT_STATE_KEY, prompt or DEFAULT_PROMPT_KEY)
        names = [*keys.images, keys.state, keys.prompt]
        if len(set(names)) != len(names):
            raise ValueError(f"observation keys must differ, got {names}")
        return keys


# ------------------------------------------------------------------------------------------ requests
def policy_image(value: Any, key: str, size: int) -> np.ndarray:
    """One camera image from a request as uint8 [size, size, 3] (HWC or CHW, uint8 or float in [0, 1])."""
    if not isinstance(value, np.ndarray):
        raise BadRequest(f"{key}: expected an image array (numpy, HWC or CHW), got {type(value).__name__}")
    if value.ndim != 3 or 3 not in (value.shape[0], value.shape[-1]):
        raise BadRequest(f"{key}: expected an image of shape [H, W, 3] or [3, H, W], got {list(value.shape)}")
    img = value if value.shape[-1] == 3 else np.moveaxis(value, 0, -1)
    h, w = img.shape[:2]
    if not (1 <= h <= MAX_IMAGE_SIDE and 1 <= w <= MAX_IMAGE_SIDE):
        raise BadRequest(f"{key}: image height and width must be 1..{MAX_IMAGE_SIDE}, got {h}x{w}")
    if img.dtype == np.uint8:
        pixels = img
    elif img.dtype.kind == "f":
        if not np.isfinite(img).all():
            raise BadRequest(f"{key}: the image holds NaN or infinite values")
        lo, hi = float(img.min()), float(img.max())
        if lo < 0.0 or hi > 1.0:
            raise BadRequest(
                f"{key}: float images must be in [0, 1], got values in [{lo:g}, {hi:g}] (or send uint8)"
            )
        pixels = np.rint(img.astype(np.float32) * 255.0).astype(np.uint8)
    else:
        raise BadRequest(f"{key}: image dtype {img.dtype} is not allowed (allowed: uint8 0..255, float 0..1)")
    if (h, w) == (size, size):
        return np.ascontiguousarray(pixels)
    from policy_and_value.models.pi0.preprocess import resize_with_pad

    x = torch.tensor(pixels).permute(2, 0, 1)[None].float()
    x = resize_with_pad(x, size, pad_value=0.0)
    return x[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8).numpy()


def policy_state(value: Any, key: str, state_dim: int) -> np.ndarray:
    """The state vector from a request as float32 [state_dim] (an array or list of finite numbers)."""
    if isinstance(value, list | tuple):
        try:
            value = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise BadRequest(f"{key}: expected {state_dim} numbers, got a list that is not numeric") from None
    if not isinstance(value, np.ndarray):
        raise BadRequest(f"{key}: expected an array of {state_dim} numbers, got {type(value).__name__}")
    if value.dtype.kind not in "iuf":
        raise BadRequest(f"{key}: state dtype {value.dtype} is not allowed (allowed: int, uint, float)")
    if value.shape not in ((state_dim,), (1, state_dim)):
        raise BadRequest(
            f"{key}: expected shape [{state_dim}] (or [1, {state_dim}]), got {list(value.shape)}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        state = value.reshape(state_dim).astype(np.float32)
    if not np.isfinite(state).all():
        raise BadRequest(f"{key}: the state holds NaN or infinite values (or values beyond float32)")
    return state


def policy_prompt(value: Any, key: str, prompts: dict[str, str]) -> str:
    """The instruction text: the string sent, or the instruction of a task name the policy knows."""
    if not isinstance(value, str):
        raise BadRequest(f"{key}: expected the instruction as a string, got {type(value).__name__}")
    text = value.strip()
    if not text or len(text) > MAX_PROMPT_CHARS:
        raise BadRequest(
            f"{key}: the instruction must have 1..{MAX_PROMPT_CHARS} characters, got {len(text)}"
        )
    return prompts.get(text, text)


# ------------------------------------------------------------------------------------------ the policy
class ServedPolicy:
    """A pi0 policy directory answering single observations (thread-safe: one inference at a time).

    ``seed`` None draws fresh initial noise for each request. An int draws it from a generator seeded by
    ``seed`` and a hash of the observation (images, state, prompt): the answer is a function of the
    observation alone (in any batch, on any connection), so served and in-process runs can be compared,
    while different observations still start from different noise, as with fresh draws.
    """

    def __init__(
        self,
        policy_dir: str | Path,
        cameras: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        image_keys: Sequence[str] | None = None,
        state_key: str | None = None,
        prompt_key: str | None = None,
        seed: int | None = None,
        device: str = "cpu",
    ):
        from policy_and_value.models.pi0 import from_pretrained

        self.policy_dir = Path(policy_dir)
        self.spec: DeploySpec = spec_for_policy_dir(
            self.policy_dir, list(cameras) if cameras else None, list(tasks) if tasks else None
        )
        self.policy = from_pretrained(self.policy_dir, device=device).eval()
        cfg = self.policy.cfg
        for name, have, want in (
            ("state_dim", self.spec.state_dim, cfg.state_dim),
            ("action_dim", self.spec.action_dim, cfg.action_dim),
            ("chunk_size", self.spec.chunk_size, cfg.num_action_chunks),
            ("image_size", self.spec.image_size, cfg.vision.image_size),
        ):
            if have != want:
                raise ValueError(f"{self.policy_dir}/deploy.json: {name}={have} but config.json has {want}")
        self.keys = ObservationKeys.for_cameras(len(self.spec.cameras), image_keys, state_key, prompt_key)
        self.seed = seed
        self.device = torch.device(device)
        self._noise_shape = (1, cfg.chunk_size, cfg.max_action_dim)
        self._lock = threading.Lock()
        self._task_ids = {p: i for i, p in enumerate(self.spec.prompts.values())}

    def metadata(self) -> dict[str, Any]:
        """What the server sends on connect: cameras and their keys, sizes, chunk size and known prompts."""
        s = self.spec
        return {
            "server": "worldrl",
            "policy_type": "pi05" if self.policy.cfg.pi05 else "pi0",
            "cameras": list(s.cameras),
            "image_keys": list(self.keys.images),
            "image_size": [s.image_size, s.image_size],
            "state_key": self.keys.state,
            "state_dim": s.state_dim,
            "state_type": s.state_type,
            "prompt_key": self.keys.prompt,
            "prompts": dict(s.prompts),
            "action_dim": s.action_dim,
            "chunk_size": s.chunk_size,
            "action_horizon": s.chunk_size,  # openpi's name for it (ActionChunkBroker's action_horizon)
            "max_episode_steps": s.max_episode_steps,
            "noise_seed": self.seed,
        }

    def parse(self, obs: Any) -> dict[str, Any]:
        """A request map -> the policy's batch-of-one observation (images uint8 [1, V, S, S, 3])."""
        if not isinstance(obs, dict):
            raise BadRequest(f"expected a map of observation keys, got {type(obs).__name__}")
        keys = self.keys
        missing = [k for k in (*keys.images, keys.state, keys.prompt) if k not in obs]
        if missing:
            have = sorted(str(k) for k in obs)[:10]
            raise BadRequest(f"missing observation keys {missing} (got {have})")
        size = self.spec.image_size
        images = np.stack([policy_image(obs[k], k, size) for k in keys.images])
        state = policy_state(obs[keys.state], keys.state, self.spec.state_dim)
        prompt = policy_prompt(obs[keys.prompt], keys.prompt, self.spec.prompts)
        return {
            "images": torch.from_numpy(images)[None],
            "state": torch.from_numpy(state)[None],
            "prompt": [prompt],
            "task_id": torch.tensor([self._task_ids.get(prompt, 0)], dtype=torch.int64),
        }

    @torch.no_grad()
    def act_many(self, batches: list[dict[str, Any]]) -> list[np.ndarray]:
        """Deterministic (ODE) action chunks float32 [chunk_size, action_dim] for parsed observations,
        inferred as one batch (with ``seed``, each row from its observation's own noise)."""
        obs = {
            "images": torch.cat([b["images"] for b in batches]),
            "state": torch.cat([b["state"] for b in batches]),
            "prompt": [p for b in batches for p in b["prompt"]],
            "task_id": torch.cat([b["task_id"] for b in batches]),
        }
        with self._lock:
            noise = None if self.seed is None else torch.cat([self.observation_noise(b) for b in batches])
            actions = self.policy.predict(obs, mode="eval", noise=noise).actions.float().cpu().numpy()
        if self.spec.action_low is not None and self.spec.action_high is not None:
            actions = np.clip(actions, self.spec.action_low, self.spec.action_high)
        if not np.isfinite(actions).all():
            raise RuntimeError("the policy produced non-finite actions")
        return list(actions.astype(np.float32))

    def observation_noise(self, batch: dict[str, Any]) -> torch.Tensor:
        """The initial noise [1, chunk_size, max_action_dim] of a parsed observation under ``seed``."""
        digest = hashlib.blake2b(digest_size=8)
        digest.update(int(self.seed or 0).to_bytes(8, "little", signed=True))
        digest.update(batch["images"].numpy().tobytes())
        digest.update(batch["state"].numpy().tobytes())
        digest.update("\x00".join(batch["prompt"]).encode())
        gen = torch.Generator().manual_seed(int.from_bytes(digest.digest(), "little") >> 1)
        return torch.randn(self._noise_shape, generator=gen).to(self.device)

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        """The action chunk for one parsed observation."""
        return self.act_many([batch])[0]

    def infer(self, obs: Any) -> dict[str, np.ndarray]:
        """openpi's ``infer``: a request map in, ``{"actions": [chunk_size, action_dim]}`` out."""
        return {"actions": self.act(self.parse(obs))}


def client_observation(
    keys: ObservationKeys, images: np.ndarray, state: np.ndarray, prompt: str
) -> dict[str, Any]:
    """What a robot sends for one step: each camera's HWC uint8 image, the state and the instruction."""
    obs: dict[str, Any] = {k: np.ascontiguousarray(images[v]) for v, k in enumerate(keys.images)}
    obs[keys.state] = np.asarray(state, dtype=np.float32)
    obs[keys.prompt] = prompt
    return obs
