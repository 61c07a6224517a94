"""The emulated Cloud Storage of the Vertex provider: an in-memory map of buckets, safe across handler threads."""

from __future__ import annotations

import threading


class GcsObjects:
    """Buckets of the emulated Cloud Storage: `(bucket, object name) → bytes`, safe across handler threads."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()

    def put(self, bucket: str, name: str, content: bytes) -> None:
        """Create or replace one object."""
        with self._lock:
            self._objects[(bucket, name)] = content

    def get(self, bucket: str, name: str) -> bytes | None:
        """An object's content, or None."""
        with self._lock:
            return self._objects.get((bucket, name))

    def list(self, bucket: str, prefix: str = "") -> list[str]:
        """Object names in `bucket` starting with `prefix`, sorted (GCS lists lexicographically)."""
        with self._lock:
            return sorted(n for (b, n) in self._objects if b == bucket and n.startswith(prefix))

    def put_uri(self, uri: str, content: bytes) -> None:
        """Create or replace the object at `gs://bucket/name`."""
        bucket, name = split_gs_uri(uri)
        self.put(bucket, name, content)

    def get_uri(self, uri: str) -> bytes | None:
        """The object at `gs://bucket/name`, or None."""
        bucket, name = split_gs_uri(uri)
        return self.get(bucket, name)


def split_gs_uri(uri: str) -> tuple[str, str]:
    """`gs://bucket/a/b` → `("bucket", "a/b")`; ValueError for anything else."""
    if not uri.startswith("gs://") or "/" not in uri[5:]:
        raise ValueError(f"not a gs:// object URI: {uri!r}")
    bucket, _, name = uri[5:].partition("/")
    return bucket, name
