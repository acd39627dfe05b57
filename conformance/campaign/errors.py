"""Errors of the campaign pipeline: a missing runtime, bad campaign options, unreadable results.

They derive from `KafkalogError`, so the CLI prints them as one line and exits 2. None of them is
ever a run's result: a run that fails inside a task becomes an `adapter_error` row instead.
"""

from __future__ import annotations

from kafkalog.model.errors import KafkalogError


class CampaignError(KafkalogError):
    """Root of the campaign pipeline's errors."""


class JavaMissingError(CampaignError):
    """Java 17+ (needed by Spark 4) is absent or too old; the message says how to install it."""


class CampaignOptionsError(CampaignError):
    """Campaign options that contradict themselves or the runs already recorded for the id."""


class CampaignDataError(CampaignError):
    """A campaign directory or Parquet dataset that is missing or does not match the schema."""


class CampaignJobError(CampaignError):
    """A Spark job of the campaign failed; committed waves are kept and the campaign resumes."""


class CampaignBusyError(CampaignError):
    """Another live process holds the campaign id's lock (one writer per campaign id)."""


class CampaignIncompleteError(CampaignError):
    """After the waves, some seeds of the campaign's range have no row (or some have two)."""


class SparkMissingError(CampaignError):
    """The `spark` extra (pyspark, pyarrow, pandas) is not installed; the message names it."""
