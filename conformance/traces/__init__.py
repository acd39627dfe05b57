"""Trace files: writing, reading, replaying, minimising and scripted traces."""
