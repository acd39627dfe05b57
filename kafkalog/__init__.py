"""kafkalog: Kafka's partition log as an executable spec (model), a real store (impl) and a checker (conformance)."""

__version__ = "0.1.0"
