"""Campaigns as a Spark pipeline: seeded tasks, waves, the exactly-once Parquet store, aggregation,
counterexamples, the HTML report and the zip that ships kafkalog to a cluster."""
