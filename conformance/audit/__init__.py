"""`kafkalog audit`: read-only verification of many Kafka log directories as a Spark job, with
findings in Parquet and an HTML report (specs/audit-schema.md)."""
