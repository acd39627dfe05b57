"""The hostile-input fuzz suite: mutated log files, adapter messages and traces.

`builders` makes the hostile files, `mutators` the Hypothesis strategies that damage them,
`harness` runs one case in a sandbox and classifies the outcome, and `campaign` drives many
cases for `kafkalog fuzz`. The invariants are in `harness`'s docstring and the README.
"""
