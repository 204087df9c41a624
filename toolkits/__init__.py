"""Tools around the training jobs: the shared base (``toolkits.base``), the episode format, scripted experts, episode
collection, checkpoint export, the policy server, the recipes that chain these stages, and the ``worldrl`` command
(``toolkits.cli``)."""
