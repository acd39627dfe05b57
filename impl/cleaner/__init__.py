"""The log cleaner (CLN-*): plan a pass from the log's facts, filter batches, swap segments."""
