"""Serving exported policies to robots over openpi's websocket protocol.

``spec`` (``deploy.json``: cameras, sizes, prompts), ``wire`` (msgpack with openpi's ndarray encoding),
``served`` (a policy directory behind one observation -> action-chunk call), ``serve_policy`` (the
server), ``record`` (what it serves, saved as episodes for finetuning) and ``robot_client`` (Meta-World
episodes through openpi's own client).
"""
