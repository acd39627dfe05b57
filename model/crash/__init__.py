"""Crashes: the set of states a crash and an unclean load may leave (specs/log.md §15)."""
