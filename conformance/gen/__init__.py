"""What the checker generates: the state machines, their rules, picks, scenarios and config
families."""
