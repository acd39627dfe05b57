"""`python -m kafkalog`: the `kafkalog` command, for callers that run it as a program (the
spark-submit launchers, the memory measurements) rather than import the CLI."""

from kafkalog.cli.main import main

main()
