"""Crash checking: the recording and fault-injecting file systems, crash images and the crash
sweep."""
