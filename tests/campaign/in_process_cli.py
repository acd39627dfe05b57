"""`kafkalog ARGS` run in-process, so a test's Spark session is shared with the command."""

from __future__ import annotations

import pytest

from kafkalog.cli.main import main


def entry_point(args: list[str]) -> int:
    """Run `kafkalog.cli.main.main` with `args` as the shell would; its exit status."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.argv", ["kafkalog", *args])
        try:
            main()
        except SystemExit as done:
            return int(done.code or 0)
    return 0
