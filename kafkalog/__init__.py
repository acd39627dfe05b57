"""kafkalog: Kafka's partition log as an executable spec, a real store and a conformance checker."""

__version__ = "0.1.0"
