"""`kafkalog verify` and `kafkalog dump`: a read-only consistency check of a Kafka log
directory, and views of its files with what the check finds."""
