"""Lockstep checking: systems under test, comparison with the model, observation, coverage."""
