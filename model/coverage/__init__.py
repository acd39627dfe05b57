"""Which spec rules a step exercised: the rule coverage the checker reports."""
