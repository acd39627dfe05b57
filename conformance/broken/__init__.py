"""Deliberately broken implementations: each puts one known bug into the real implementation so
the checker's power can be measured (`kafkalog check --impl broken:NAME`)."""
