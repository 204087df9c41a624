"""The command-line checks of ``serve_policy``: every flag, the policy directory (or the registry's current version)
and the listening address, each one ``config error`` line before the policy loads."""

from __future__ import annotations

import argparse
import errno
import socket
from pathlib import Path

from toolkits.base.errors import ConfigError, config_error

MAX_PORT = 65535


def bind_error(host: str, port: int, err: OSError) -> ConfigError:
    """The one line for a listening socket that could not be opened on ``host:port``."""
    if err.errno == errno.EADDRINUSE:
        return config_error(
            "--port", port, f"already in use on {host} (another server listens there): choose another, or 0 for any free one"
        )  # fmt: skip
    if isinstance(err, socket.gaierror):
        return config_error("--host", host, f"not an address of this machine ({err.strerror})")
    reason = err.strerror or " ".join(str(err).split())
    return config_error("--host", host, f"cannot listen on port {port} there ({reason})")


def check_bind(host: str, port: int) -> None:
    """Open and close a listening socket on each address of ``host:port`` as the server will (address reuse
    on, IPv6 sockets IPv6-only), so a port in use or a foreign address is one line before the model loads."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise bind_error(host, port, err) from None
    for family, kind, proto, _, address in dict.fromkeys(infos):
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as err:
                raise bind_error(host, port, err) from None


def check_args(args: argparse.Namespace) -> None:
    """Every flag of the command line, before the policy loads: one ``config error`` line naming the flag,
    the value and what is allowed."""
    from policy_and_value.models.pi0.configuration_pi0 import policy_dir_problem
    from toolkits.deploy.deploy_checks import policy_dir_deploy_problem
    from toolkits.deploy.spec import DEPLOY_FILE

    if args.registry is not None:
        from toolkits.deploy.registry import PolicyRegistry, RegistryError

        try:
            args.policy_dir = str(PolicyRegistry(args.registry).current_path())
        except RegistryError as err:
            raise config_error("--registry", args.registry, str(err).split(": ", 1)[-1]) from None
        if not args.follow_interval > 0:
            raise config_error("--follow-interval", args.follow_interval, "must be > 0 seconds")
    flag = "--policy-dir" if args.registry is None else "--registry (its current version)"
    problem = policy_dir_problem(args.policy_dir)
    if problem is None:
        problem = policy_dir_deploy_problem(args.policy_dir, args.cameras)
    if problem is not None:
        raise config_error(flag, args.policy_dir, problem)
    if not (Path(args.policy_dir) / DEPLOY_FILE).is_file() and not args.cameras:
        raise config_error(
            flag, args.policy_dir,
            f"no {DEPLOY_FILE}; pass --cameras with the camera names in the order the policy was trained with "
            "(e.g. --cameras corner gripperPOV), or write one: python -m toolkits.deploy.spec --policy-dir DIR --env ENV",
        )  # fmt: skip
    if not 0 <= args.port <= MAX_PORT:
        raise config_error("--port", args.port, f"a TCP port is 0..{MAX_PORT} (0: any free port, printed)")
    for flag, value, low in (
        ("--max-batch", args.max_batch, 1),
        ("--record-max-steps", args.record_max_steps, 1),
        ("--threads", args.threads, 1),
    ):
        if value is not None and value < low:
            raise config_error(flag, value, f"must be >= {low}")
    if not args.max_message_mb > 0:
        raise config_error("--max-message-mb", args.max_message_mb, "must be > 0")
    import torch

    try:
        device = torch.device(args.device)
    except (RuntimeError, TypeError):
        raise config_error("--device", args.device, "allowed: cpu, cuda, cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise config_error("--device", args.device, "allowed: cpu, cuda, cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise config_error("--device", args.device, "CUDA is not available on this machine: use cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise config_error(
            "--device", args.device, f"this machine has {torch.cuda.device_count()} CUDA devices"
        )
    check_bind(args.host, args.port)
