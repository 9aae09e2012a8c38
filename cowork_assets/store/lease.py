"""Work that one holder at a time may do: among one machine's processes, a lock file (`file_lock`, fcntl); on an
S3 data root, among machines, a lease object beside the data.

A lease is `state/leases/<name>.lease` in the data root, created with S3's conditional put (`If-None-Match: *`), so
of two machines that try at once exactly one creates it. Its holder rewrites it (`If-Match` its own ETag) every
third of its time to live, and deletes it when done; a lease whose holder stopped renewing (a killed process, a
lost machine) is stale and is taken over with `If-Match` on the stale version's ETag, so two waiters never both
take it. Staleness never compares two machines' clocks: a lease is stale once the store's own clock says it was
last written a time to live ago (its `Last-Modified` against the response's `Date`), or once the waiter has seen
it unchanged for a time to live by its own clock. A holder whose clock is years off, or a lease object that is not
JSON (named to the waiter), is taken over the same way. Leases: `publisher` (the cross-batch steps) and
`batch-<name>` (a batch's run).
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from pathlib import Path

import orjson

from cowork_assets.store.storage import join

TTL_SECONDS = 60.0
POLL_SECONDS = 1.0
_TAKEN = {"PreconditionFailed", "ConditionalRequestConflict"}  # another writer came first


@contextmanager
def file_lock(path: Path, waiting: Callable[[], None] | None = None, shared: bool = False) -> Iterator[None]:
    """Hold the lock file `path` for the block: alone, or (`shared`) beside other shared holders. `waiting` is
    called once if another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                waiting()
            fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def applies(root: str) -> bool:
    """Whether `root` needs leases: an S3 data root, which machines that share no instance may write at once."""
    return root.startswith("s3://")


def _taken(error: Exception) -> bool:
    return getattr(error, "response", {}).get("Error", {}).get("Code") in _TAKEN


class Lease:
    """One lease on an S3 data root: `acquire` waits while another holder's is live, `release` gives it back."""

    def __init__(self, root: str, name: str, ttl: float = TTL_SECONDS):
        import boto3  # imported here: only an S3 data root needs it

        self.s3 = boto3.client("s3")
        self.bucket, _, self.key = join(root, "state", "leases", f"{name}.lease").removeprefix("s3://").partition("/")
        self.ttl = ttl
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._etag: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _put(self, **condition: str) -> str | None:
        """Write this holder's lease under `condition`: its new ETag, or None when another writer came first."""
        from botocore.exceptions import ClientError

        body = orjson.dumps({"holder": self.holder, "expires": time.time() + self.ttl})
        try:
            return self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body, **condition)["ETag"]
        except ClientError as exc:
            if _taken(exc):
                return None
            raise

    def acquire(self, waiting: Callable[[str], None] | None = None) -> None:
        """Take the lease, waiting while another holder's is live; `waiting` is told that holder, once."""
        told, seen = False, ("", 0.0)  # the lease version last seen, and since when (this machine's clock)
        while (etag := self._put(IfNoneMatch="*")) is None:
            try:
                current = self.s3.get_object(Bucket=self.bucket, Key=self.key)
            except self.s3.exceptions.NoSuchKey:
                continue  # released meanwhile
            if current["ETag"] != seen[0]:
                seen = (current["ETag"], time.monotonic())
            # its holder stopped renewing (the store's clock counts whole seconds: a second's margin)
            if _age(current) >= self.ttl + 1 or time.monotonic() - seen[1] >= self.ttl:
                if (etag := self._put(IfMatch=current["ETag"])) is not None:
                    break
                continue
            if waiting and not told:
                waiting(self._holder(current["Body"].read()))
                told = True
            time.sleep(POLL_SECONDS)
        self._etag = etag
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name=f"lease {self.key}", daemon=True)
        self._renewer.start()

    def _holder(self, body: bytes) -> str:
        """Who holds the lease, from its object; an object that is not a lease is named."""
        try:
            return str(orjson.loads(body)["holder"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return (
                f"an unreadable lease object s3://{self.bucket}/{self.key} (taken over once unchanged for "
                f"{self.ttl:g}s)"
            )

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            if (etag := self._put(IfMatch=self._etag)) is None:
                return  # lost: taken over after this process stalled past its time to live
            self._etag = etag

    def release(self) -> None:
        from botocore.exceptions import ClientError

        if self._renewer is None:
            return
        self._stop.set()
        self._renewer.join()
        self._renewer = None
        try:
            self.s3.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=self._etag)
        except ClientError as exc:
            if not _taken(exc):  # taken over meanwhile: the lease is another holder's now
                raise


def _age(response: dict) -> float:
    """Seconds since the object was last written, by the store's own clock (its `Last-Modified` against the
    response's `Date`); 0 when the store does not say."""
    try:
        now = parsedate_to_datetime(response["ResponseMetadata"]["HTTPHeaders"]["date"])
        return (now - response["LastModified"]).total_seconds()
    except (KeyError, TypeError, ValueError):
        return 0.0


_held: dict[tuple[str, str], Lease] = {}  # leases this process holds: a nested hold of one is a no-op


def hold(root: str, name: str, waiting: Callable[[str], None] | None = None, ttl: float = TTL_SECONDS) -> bool:
    """Take the lease `name` of an S3 data root for this process until `let_go`; False when it already held it
    (the CLI holds `publisher` around the cross-batch runs it executes in its own process)."""
    if (root, name) in _held:
        return False
    lease = Lease(root, name, ttl)
    lease.acquire(waiting)
    _held[(root, name)] = lease
    return True


def let_go(root: str, name: str) -> None:
    if lease := _held.pop((root, name), None):
        lease.release()


@contextmanager
def held(
    root: str, name: str, waiting: Callable[[str], None] | None = None, ttl: float = TTL_SECONDS
) -> Iterator[None]:
    """Hold the lease `name` of an S3 data root for the block (at once if this process holds it already)."""
    taken = hold(root, name, waiting, ttl)
    try:
        yield
    finally:
        if taken:
            let_go(root, name)
