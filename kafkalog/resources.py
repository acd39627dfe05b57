"""Where the spec files are: packaged in a wheel, or beside the package in a checkout.

`specs/` (rules, error catalogue, counterexamples) is shipped as the data package
`kafkalog.specs` (pyproject.toml maps it from the top-level `specs/` folder), so `kafkalog
explain` and rule coverage work from a plain `pip install`. In a source checkout, also an
editable install made before that mapping existed, the folder is found next to `kafkalog/`.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

_CHECKOUT_SPECS = Path(__file__).resolve().parents[1] / "specs"


@functools.cache
def specs_dir() -> Path:
    """The directory holding log.md, errors.md, counterexamples/ (checkout first, then wheel)."""
    if (_CHECKOUT_SPECS / "log.md").is_file():
        return _CHECKOUT_SPECS
    try:
        # `kafkalog.specs` has no __init__.py, so files() gives a MultiplexedPath (a namespace
        # package); joining a name yields a real path, whose parent is the folder.
        packaged = Path(str(resources.files("kafkalog.specs").joinpath("log.md"))).parent
    except (ModuleNotFoundError, TypeError, ValueError):
        return _CHECKOUT_SPECS  # neither: callers report the spec as missing
    return packaged if (packaged / "log.md").is_file() else _CHECKOUT_SPECS
