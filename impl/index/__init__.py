"""The offset, time and transaction indexes (mmap'd) and their read-only views."""
