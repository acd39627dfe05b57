"""`kafkalog verify`: a read-only consistency check of a Kafka log directory."""
