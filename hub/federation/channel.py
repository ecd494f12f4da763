"""Numbered envelopes of the hub <-> agent protocol: items, batching, seq/ack, replay.

The pure building blocks of :mod:`hub.federation.session`: wrapping items into their
oneof envelopes, and :class:`SeqChannel`, one direction's outbox (kept until the peer
acknowledges, replayed on the next stream) plus the inbound deduplication.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Generic, Literal, TypeVar

from google.protobuf.message import Message

from mkhub.v1 import federation_pb2 as pb

HubItemLike = pb.HubItem | pb.Dispatch | pb.Start | pb.Withdraw | pb.Ping
AgentItemLike = pb.AgentItem | pb.Reserved | pb.Status

DEFAULT_MAX_ITEMS_PER_ENVELOPE = 1000
# Well under gRPC's message limit (transports raise it to 64 MiB) so that a
# batch of large Workload/Job manifests never produces an unsendable envelope.
DEFAULT_MAX_BYTES_PER_ENVELOPE = 1 << 20

CallSoon = Callable[[Callable[[], None]], None]


class ProtocolError(Exception):
    """The peer broke the protocol; the transport must close the stream."""


class StaleStream(Exception):
    """The stream handle is no longer the current one (it was closed or replaced)."""


RejectCode = Literal["unauthenticated", "permission_denied", "invalid_argument"]


class Rejected(Exception):
    """The hub refuses a new stream; the transport maps ``code`` to a gRPC status."""

    def __init__(self, code: RejectCode, message: str) -> None:
        super().__init__(message)
        self.code: RejectCode = code
        self.message = message


def hub_item(msg: HubItemLike) -> pb.HubItem:
    """Wrap a Dispatch/Start/Withdraw/Ping into a HubItem (a HubItem is returned as is)."""
    if isinstance(msg, pb.HubItem):
        return msg
    if isinstance(msg, pb.Dispatch):
        return pb.HubItem(dispatch=msg)
    if isinstance(msg, pb.Start):
        return pb.HubItem(start=msg)
    if isinstance(msg, pb.Withdraw):
        return pb.HubItem(withdraw=msg)
    if isinstance(msg, pb.Ping):
        return pb.HubItem(ping=msg)
    raise TypeError(f"not a hub item: {type(msg).__name__}")


def agent_item(msg: AgentItemLike) -> pb.AgentItem:
    """Wrap a Reserved/Status into an AgentItem (an AgentItem is returned as is)."""
    if isinstance(msg, pb.AgentItem):
        return msg
    if isinstance(msg, pb.Reserved):
        return pb.AgentItem(reserved=msg)
    if isinstance(msg, pb.Status):
        return pb.AgentItem(status=msg)
    raise TypeError(f"not an agent item: {type(msg).__name__}")


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------ SeqChannel

ItemT = TypeVar("ItemT", bound=Message)
InT = TypeVar("InT", bound=Message)  # items received (the channel carries the items sent)


class SeqChannel(Generic[ItemT]):
    """Both directions' bookkeeping for one logical session, seen from one side.

    Outbound: items are pushed, packed into numbered batches when taken, and
    kept in the outbox until the peer acknowledges them. ``rewind()`` (on a new
    stream) makes ``take()`` return the unacknowledged batches again.
    Inbound: the highest accepted peer seq, and how much of it we acknowledged.
    """

    def __init__(
        self,
        *,
        max_items: int = DEFAULT_MAX_ITEMS_PER_ENVELOPE,
        max_bytes: int = DEFAULT_MAX_BYTES_PER_ENVELOPE,
    ) -> None:
        if max_items < 1 or max_bytes < 1:
            raise ValueError("max_items and max_bytes must be positive")
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.out_seq = 0  # seq of the last batch created
        self.peer_acked = 0  # highest of our seqs the peer acknowledged
        self.in_last = 0  # highest peer seq accepted
        self.ack_sent = 0  # the ack value most recently stamped on an envelope
        self._pending: list[ItemT] = []
        self._outbox: deque[tuple[int, list[ItemT]]] = deque()
        self._next_send = 1  # seq of the next outbox batch to write on this stream
        self._high_sent = 0  # highest seq ever written (to count replays)
        self.replayed = 0  # batches written more than once

    # outbound
    def push(self, items: Iterable[ItemT]) -> None:
        self._pending.extend(items)

    def _pack(self) -> None:
        if not self._pending:
            return
        batch: list[ItemT] = []
        size = 0
        for item in self._pending:
            item_size = item.ByteSize()
            if batch and (len(batch) >= self.max_items or size + item_size > self.max_bytes):
                self._append_batch(batch)
                batch, size = [], 0
            batch.append(item)
            size += item_size
        self._append_batch(batch)
        self._pending = []

    def _append_batch(self, batch: list[ItemT]) -> None:
        self.out_seq += 1
        self._outbox.append((self.out_seq, batch))

    def take(self) -> list[tuple[int, list[ItemT]]]:
        """The batches to write now: unsent outbox batches (replay first), then new ones."""
        self._pack()
        if not self._outbox or self._next_send > self.out_seq:
            return []
        start = max(0, self._next_send - self._outbox[0][0])
        batches = list(islice(self._outbox, start, None))
        for seq, _ in batches:
            if seq <= self._high_sent:
                self.replayed += 1
        self._high_sent = max(self._high_sent, self.out_seq)
        self._next_send = self.out_seq + 1
        return batches

    def has_unsent(self) -> bool:
        return bool(self._pending) or self._next_send <= self.out_seq

    def on_peer_ack(self, ack: int) -> None:
        if ack > self.out_seq:
            raise ProtocolError(f"peer acknowledged seq {ack} but only {self.out_seq} was sent")
        while self._outbox and self._outbox[0][0] <= ack:
            self._outbox.popleft()
        self.peer_acked = max(self.peer_acked, ack)

    def rewind(self) -> None:
        """A new stream: write every unacknowledged batch again, in order."""
        self._next_send = self._outbox[0][0] if self._outbox else self.out_seq + 1

    @property
    def unacked(self) -> int:
        """Batches in the outbox (written or not, not yet acknowledged)."""
        return len(self._outbox)

    @property
    def pending_items(self) -> int:
        return len(self._pending) + sum(len(items) for _, items in self._outbox)

    # inbound
    def is_new(self, seq: int) -> bool:
        return seq > self.in_last

    def commit(self, seq: int) -> None:
        self.in_last = max(self.in_last, seq)

    def stamp_ack(self) -> int:
        self.ack_sent = self.in_last
        return self.in_last

    @property
    def ack_due(self) -> int:
        """How far the peer's view of our ack lags behind (0: nothing to acknowledge)."""
        return self.in_last - self.ack_sent

    def reset_inbound(self) -> None:
        """The peer is a new process: its numbering starts over."""
        self.in_last = 0
        self.ack_sent = 0

    def reset(self) -> None:
        """The peer is a new process and what it had not acknowledged is moot: drop it."""
        self.reset_inbound()
        self._pending = []
        self._outbox.clear()
        self.peer_acked = self.out_seq
        self._next_send = self.out_seq + 1


@dataclass
class Stats:
    envelopes_in: int = 0
    envelopes_out: int = 0
    items_in: int = 0
    items_out: int = 0
    duplicates: int = 0  # numbered envelopes dropped as already accepted
