"""Loading a partition directory (Kafka's LogLoader) and a whole `log.dirs` directory."""
