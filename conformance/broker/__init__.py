"""Checking real brokers over Kafka's wire protocol: the broker process, the requests, and the
adapter that presents a broker as a system under test."""
