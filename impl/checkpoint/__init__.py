"""Checkpoint files (recovery point, log start offset, high watermark) and the leader-epoch
cache."""
