"""A replicated partition of 2-3 replicas of the single-log model."""
