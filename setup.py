"""Only the optional C extension; everything else is declared in pyproject.toml.

`kafkalog.impl.records._scan` (impl/records/_scan*.c) speeds up recovery, checked reads, appends
and lookups. It is optional: when it cannot be built (no C compiler, no Python headers)
setuptools warns and installs kafkalog without it, and `kafkalog.impl.records.batch_scan` and the
other twins use their pure-Python references.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kafkalog.impl.records._scan",
                             ["impl/records/_scan.c", "impl/records/_scan_crc.c",
                              "impl/records/_scan_crc_fold.c",
                              "impl/records/_scan_append.c", "impl/records/_scan_rows.c",
                              "impl/records/_scan_write.c", "impl/records/_scan_index.c",
                              "impl/records/_scan_walk.c"],
                             depends=["impl/records/_scan.h"], optional=True,
                             extra_compile_args=["-O2"])])
