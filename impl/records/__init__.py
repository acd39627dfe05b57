"""Kafka's record formats: v2 batches, legacy message sets, compression, the scans (C units beside
their Python twins)."""
