"""Log compaction (CLN-*): the cleaner's dirty range, decisions, passes and checkpoint."""
