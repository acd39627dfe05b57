"""Adapters that run on the JVM: Apache Kafka's own partition log behind the adapter protocol
(adapters/kafka/, built with Maven per Kafka release; `kafka_adapter.adapter_command`)."""
