"""What `kafkalog verify PATH` checks, told from the path: a log directory, or one partition.

A partition directory given on its own is verified alone, reading nothing outside it (its root
checkpoints and clean-shutdown marker live in the parent, which is not read); anything else is
verified as a log directory (`verify_log_dir`, which refuses an empty directory).
"""

from __future__ import annotations

from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import RootCheckpoints, parse_partition_dir_name
from kafkalog.impl.verify.verifier import (
    Finding,
    Severity,
    VerifyReport,
    verify_log_dir,
    verify_partition,
)
from kafkalog.model.errors import InvalidLogDirNameError


def is_partition_dir(fs: FileSystem, path: Path) -> bool:
    """A `<topic>-<partition>` name and no subdirectories (a log dir named `data-1` has them)."""
    try:
        parse_partition_dir_name(path.name)
    except InvalidLogDirNameError:
        return False
    return not any(fs.is_dir(path / name) and not fs.is_symlink(path / name)
                   for name in fs.list_dir(path))


def verify_partition_alone(fs: FileSystem, path: Path, deep: bool = False) -> VerifyReport:
    """Check one partition directory given on its own, reading nothing outside it.

    The root checkpoints and the clean-shutdown marker live in the parent, which is not read:
    the partition is checked as after an unclean shutdown (the lenient reading of REC-10) and
    its offsets are not compared with any checkpoint.
    """
    name = parse_partition_dir_name(path.name, where=str(path))
    report = VerifyReport(str(path), clean_shutdown=False)
    report.partitions.append(verify_partition(fs, name.topic_partition, path,
                                              RootCheckpoints({}, {}, {}), False, deep,
                                              check_root_offsets=False))
    report.findings.append(Finding(Severity.NOTE, "partition_dir_alone", str(path), None,
                                 "verified as a partition directory; the log directory's "
                                 "checkpoints and clean-shutdown marker were not read", "FMT-1"))
    return report


def verify_path(fs: FileSystem, path: Path | str, deep: bool = False) -> VerifyReport:
    """`verify_partition_alone` for a partition directory, else `verify_log_dir`."""
    target = Path(path)
    if fs.is_dir(target) and is_partition_dir(fs, target):
        return verify_partition_alone(fs, target, deep)
    return verify_log_dir(fs, target, deep)
