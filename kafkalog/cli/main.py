"""The `kafkalog` command line."""
import click


@click.group()
@click.version_option(package_name="kafkalog")
def cli() -> None:
    """Kafka's partition log: model, implementation and conformance checker."""


def main() -> None:
    cli()
