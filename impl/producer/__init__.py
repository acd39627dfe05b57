"""Producer state: appends, snapshots, rebuild from the log, transaction recovery."""
