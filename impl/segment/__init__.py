"""A segment's four files (`.log`, `.index`, `.timeindex`, `.txnindex`) and the sorted map of
segments."""
