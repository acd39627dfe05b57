"""Package kafkalog for a Spark cluster: a zip for `--py-files` plus a `spark-submit` entry script.

`python -m kafkalog.conformance.campaign.ship DIR` writes `DIR/kafkalog-<version>.zip` (the
pure-Python package, laid out as `kafkalog/`, `kafkalog/model/`, ... whatever folders the source
tree maps them from) and `DIR/campaign_main.py`, so that

    spark-submit --master spark://host:7077 --py-files DIR/kafkalog-<version>.zip \
        DIR/campaign_main.py --runs 100000 --out hdfs:///kafkalog/campaigns --report-dir rep

runs the same campaign as `kafkalog campaign` on the cluster (docs/cluster.md). Third-party
dependencies with compiled parts (hypothesis, crc32c, cramjam, pyarrow) cannot travel in a zip;
they come from a packed virtualenv or the executor image.
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

from kafkalog import __version__

# The distribution's top packages; every folder below them with an `__init__.py` ships too
# (pyproject.toml [tool.setuptools] packages lists the same set, which a test checks).
ROOTS = ("kafkalog", "kafkalog.model", "kafkalog.impl", "kafkalog.conformance",
         "kafkalog.benchmarks")


def packages() -> tuple[str, ...]:
    """Every package of the distribution, found on disk (not imported), roots first."""
    found: list[str] = []
    for root in ROOTS:
        folder = _folder(root)
        found.append(root)
        found.extend(".".join([root, *init.parent.relative_to(folder).parts])
                     for init in sorted(folder.rglob("*/__init__.py")))
    return tuple(dict.fromkeys(found))


def _folder(package: str) -> Path:
    # Found, not imported: packaging the CLI must not run it (nor import it here).
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None, package
    return Path(list(spec.submodule_search_locations)[0])


LAUNCHER = '''\
"""spark-submit entry point for `kafkalog campaign` (written by kafkalog.conformance.campaign.ship).

Usage: spark-submit [--master M] --py-files kafkalog-<version>.zip campaign_main.py [options]
The master comes from spark-submit; `--master` in the campaign options is ignored.
"""

import runpy
import sys

sys.argv = ["kafkalog", "campaign", *sys.argv[1:]]
runpy.run_module("kafkalog", run_name="__main__", alter_sys=True)
'''


def build_zip(dest: Path) -> tuple[Path, Path]:
    """Write the package zip and the launcher into `dest`; returns (zip path, launcher path).

    Only `.py` files go in; entries are sorted and time-stamped 1980-01-01 so the same source
    gives the same bytes.
    """
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / f"kafkalog-{__version__}.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for package in packages():
            folder = _folder(package)
            target = package.replace(".", "/")
            for source in sorted(folder.glob("*.py")):
                info = zipfile.ZipInfo(f"{target}/{source.name}", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zipped.writestr(info, source.read_bytes())
        # The driver runs from this zip, outside any checkout: bake in the commit it came from.
        # (campaign.job needs pyarrow, an optional dependency; packaging needs it only here.)
        from kafkalog.conformance.campaign.job import git_commit

        info = zipfile.ZipInfo("kafkalog/_build_commit.py", date_time=(1980, 1, 1, 0, 0, 0))
        zipped.writestr(info, f'"""Written by campaign_ship."""\n\nCOMMIT = {git_commit()!r}\n')
    launcher = dest / "campaign_main.py"
    launcher.write_text(LAUNCHER)
    audit = LAUNCHER.replace('"campaign",', '"audit",').replace("campaign_main", "audit_main")
    (dest / "audit_main.py").write_text(audit.replace("kafkalog campaign", "kafkalog audit"))
    return archive, launcher


def main(argv: list[str] | None = None) -> None:
    """`python -m kafkalog.conformance.campaign.ship DIR`: print the two paths written."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m kafkalog.conformance.campaign.ship OUTPUT_DIR")
    for path in build_zip(Path(args[0])):
        print(path)


if __name__ == "__main__":
    main()
