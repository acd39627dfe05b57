"""`Log` (Kafka's UnifiedLog) and `LocalLog`: appends, reads, HW, retention, truncation,
transactions."""
