"""A minimal Kafka wire-protocol client: exact requests over one socket (kafka-python's codec).

The wire adapter (adapter.py) must send *exact* requests — a Produce carrying the very
batch bytes the built-in codec wrote, a ListOffsets for one timestamp, a DeleteRecords for one
offset — so it uses kafka-python's protocol layer (`kafka.protocol`, the generated message
classes and `KafkaProtocol` framing) and none of its client machinery (no batching, retries,
metadata refresh or version guessing). `KafkaConnection` sends one request and waits for its
response; versions are negotiated once with ApiVersions: v0, which every Kafka answers in the v0
layout, and v3 (KIP-511, what clients since Kafka 2.4 send first) on a fresh socket only when a
broker answers v0 in a layout the codec cannot decode (nafka answers every ApiVersions as v4).
`api_versions_version` records which one was used, and the adapter names it (adapter.py).

Everything that goes wrong with the socket (refused, reset, closed, timed out, a frame the codec
cannot decode) raises `BrokerConnectionError`; the adapter turns it into an adapter error that
quotes the broker's log tail, never into a log result.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.parser import KafkaProtocol


class BrokerConnectionError(Exception):
    """The broker could not be reached, dropped the connection, or sent an undecodable frame."""


class UndecodableResponseError(BrokerConnectionError):
    """The broker answered with a frame the codec cannot decode as the request's response."""


#: The ApiVersions version asked when v0's answer cannot be decoded: the first flexible one
#: (KIP-511), whose request carries the client's software name and version.
FLEXIBLE_API_VERSIONS = 3


class KafkaConnection:
    """One blocking connection to one broker; `request` sends and waits for the response."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0,
                 client_id: str = "kafkalog-wire") -> None:
        self.address = f"{host}:{port}"
        self._endpoint = (host, port, timeout_s, client_id)
        self._connect()
        self.versions: dict[int, tuple[int, int]] = {}
        #: The ApiVersions version the handshake used: 0, or FLEXIBLE_API_VERSIONS for a broker
        #: that answers v0 in another layout (a divergence the adapter names, KL-WIRE-1).
        self.api_versions_version = 0
        self.versions = self._api_versions()

    def _connect(self) -> None:
        host, port, timeout_s, client_id = self._endpoint
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as error:
            raise BrokerConnectionError(f"cannot connect to {self.address}: {error}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._protocol = KafkaProtocol(client_id=client_id)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        try:
            response = self.request(ApiVersionsRequest[0]())
        except UndecodableResponseError:
            response = self._flexible_api_versions()
        if response.error_code != 0:
            raise BrokerConnectionError(f"ApiVersions failed with error {response.error_code}")
        return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def _flexible_api_versions(self) -> Any:
        """ApiVersions v3 on a fresh socket (the old one may hold the rest of the frame v0
        could not decode); raises UndecodableResponseError when that fails too."""
        from kafkalog import __version__

        self.close()
        self._connect()
        self.api_versions_version = FLEXIBLE_API_VERSIONS
        return self.request(ApiVersionsRequest[FLEXIBLE_API_VERSIONS](
            client_software_name="kafkalog", client_software_version=__version__))

    def version(self, request_class: Any, wanted: int) -> int:
        """The highest version of an API both sides speak, at most `wanted`.

        Raises BrokerConnectionError when the broker does not offer the API at all.
        """
        key = request_class.API_KEY
        if key not in self.versions:
            raise BrokerConnectionError(f"broker does not offer {request_class.name} (api {key})")
        low, high = self.versions[key]
        ours = min(wanted, high, request_class.max_version)
        if ours < low:
            raise BrokerConnectionError(
                f"no common version of {request_class.name}: broker {low}..{high}, we {wanted}")
        return ours

    def supports(self, request_class: Any) -> bool:
        return request_class.API_KEY in self.versions

    def request(self, message: Any) -> Any:
        """Send one request and return its decoded response (blocking)."""
        self._protocol.send_request(message)
        try:
            self._sock.sendall(self._protocol.send_bytes())
            while True:
                data = self._sock.recv(1 << 16)
                if not data:
                    raise BrokerConnectionError(
                        f"{self.address} closed the connection during {message.name}")
                responses = self._protocol.receive_bytes(data)
                if responses:
                    return responses[0][1]
        except BrokerConnectionError:
            raise
        except TimeoutError:
            raise BrokerConnectionError(
                f"no response from {self.address} to {message.name} in time") from None
        except OSError as error:
            raise BrokerConnectionError(
                f"{self.address} failed during {message.name}: {error}") from None
        except Exception as error:  # the codec could not decode the frame
            raise UndecodableResponseError(
                f"undecodable response to {message.name}: {type(error).__name__}: {error}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
