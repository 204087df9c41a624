"""Export checkpoints for deployment (DCP directory -> plain ``.pt`` state dict)."""
