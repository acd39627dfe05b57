"""Deliberately broken implementations: each puts one known bug into the real implementation so
the checker's power can be measured (`kafkalog check --broken NAME`).

base.py states a bug against the current code (a diff of a method's source, a named step's
replacement or a wrapper); kafka_bugs.py and off_by_ones.py hold the log's bugs, crash.py,
producer.py and txn.py those of recovery, producer state and transactions; registry.py names
them all. kafka_durability.py and variants.py hold what the checker must accept instead."""
