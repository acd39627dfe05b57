"""Crash checking: the recording and fault-injecting file systems, crash images, the crash
sweep and the crash steps of a lockstep example (sweeps, allowed sets, idempotence)."""
