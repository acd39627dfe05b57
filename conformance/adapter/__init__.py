"""The adapter protocol: JSON-lines messages, the server that exposes an implementation over it
(`kafkalog serve-adapter`) and the client that drives another process through it."""
