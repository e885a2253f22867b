"""API keys: generated with :mod:`secrets`, stored as salted scrypt hashes, mapped to tenants.

A key reads ``rsk_<key_id>_<secret>``: ``key_id`` (12 hex digits) is public and names the record;
``secret`` (256 random bits, URL-safe base64) is never stored, only
``scrypt(secret, salt, n=2**14, r=8, p=1)`` with a random 16-byte salt per key, compared in
constant time. The keys file (``<data_dir>/keys.json``, mode 0600) is JSON::

    {"version": 1, "keys": [{"key_id": "...", "tenant": "acme", "name": "...",
      "scopes": ["read", "write"], "salt": "<hex>", "hash": "<hex>",
      "created": "<ISO-8601 UTC>", "revoked": false}]}

Writers (``ragstrata keys ...`` while the server runs) take an ``flock`` on ``keys.json.lock``
and replace the file atomically; the server re-reads it when its modification time changes, so
a revoked key stops working on its next request. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragstrata.errors import ConfigError
from ragstrata.service.errors import (
    AuthenticationError,
    NotFoundError,
    RateLimitedError,
    ServiceError,
)
from ragstrata.service.ratelimit import FailureBudget

KEYS_FILE = "keys.json"
SCOPES = ("read", "write", "metrics")
"""``read``: list, search, ask, job status; ``write``: upload and delete documents and
collections; ``metrics``: ``GET /metrics`` (every tenant's collection names and counts: an
operator's scope, for the scraper's key)."""
DEFAULT_SCOPES = ("read", "write")

TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
"""Tenant ids: 1-63 lower-case letters, digits, ``_`` or ``-``, starting with a letter/digit
(they name a directory, so nothing else is allowed)."""

_KEY_RE = re.compile(r"rsk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})")
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode("ascii"), salt=salt, **_SCRYPT)


def check_tenant(tenant: str) -> str:
    """``tenant`` unchanged when it is a valid tenant id, else ConfigError naming the rule."""
    if not TENANT_RE.fullmatch(tenant):
        raise ConfigError(
            f"tenant {tenant!r} is not a valid tenant id: use 1-63 lower-case letters, digits, "
            "'_' or '-', starting with a letter or digit"
        )
    return tenant


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What the keys file holds for one key (the secret itself is never stored)."""

    key_id: str
    tenant: str
    name: str
    scopes: tuple[str, ...]
    salt: str
    hash: str
    created: str
    revoked: bool = False

    def public(self) -> dict[str, Any]:
        """The record without salt and hash (for listing)."""
        return {
            "key_id": self.key_id,
            "tenant": self.tenant,
            "name": self.name,
            "scopes": list(self.scopes),
            "created": self.created,
            "revoked": self.revoked,
        }


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: the key's id, its tenant and scopes. Built only by
    :meth:`KeyStore.verify`; the tenant of every request comes from here, never from the
    request itself."""

    key_id: str
    tenant: str
    scopes: tuple[str, ...]

    def can(self, scope: str) -> bool:
        return scope in self.scopes


class KeyStore:
    """The keys file at ``path``. Thread-safe; cheap to construct (nothing is read until used).

    Wrong secrets are budgeted per key id and per client address (``failure_burst`` failures,
    refilled at ``failure_rate_per_s``): once an address's budget is spent, its attempts get
    RateLimitedError before any scrypt is computed; once a key id's budget is spent, so do the
    attempts on that id from every address with recent failures (an address without any still
    gets its one try, so the key's owner is not locked out by someone flooding its id). Every
    other key id and address goes on unaffected; unknown key ids cost no scrypt and are
    budgeted per address only. Verified keys are cached for as long as their record in the
    keys file is unchanged. Raises :class:`ServiceError` (RS700) when the file exists but is
    not a valid keys file.
    """

    def __init__(
        self, path: Path, *, failure_rate_per_s: float = 0.2, failure_burst: int = 10
    ) -> None:
        self.path = path
        # scrypt costs ~50 ms of CPU: a key id's wrong secrets are refused unhashed once its
        # budget is spent, so the CPU spent on bad keys is bounded per key id and address
        self._by_key = FailureBudget(rate=failure_rate_per_s, burst=failure_burst)
        self._by_client = FailureBudget(rate=failure_rate_per_s, burst=failure_burst)
        self._mutex = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._records: dict[str, KeyRecord] = {}
        self._verified: dict[bytes, tuple[Principal, KeyRecord]] = {}

    # ------------------------------------------------------------------ admin (CLI)
    def create(
        self, tenant: str, *, name: str = "", scopes: tuple[str, ...] = DEFAULT_SCOPES
    ) -> tuple[str, KeyRecord]:
        """A new key for ``tenant``: returns ``(plaintext_key, record)``; the plaintext is shown
        once and cannot be recovered. Raises ConfigError for a bad tenant id or scope."""
        check_tenant(tenant)
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown or not scopes:
            raise ConfigError(f"scopes {list(scopes)!r}: choose from {', '.join(SCOPES)}")
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        record = KeyRecord(
            key_id=key_id,
            tenant=tenant,
            name=name,
            scopes=tuple(s for s in SCOPES if s in scopes),
            salt=salt.hex(),
            hash=_hash(secret, salt).hex(),
            created=datetime.now(UTC).replace(microsecond=0).isoformat(),
        )
        with self._locked() as records:
            records[key_id] = record
        return f"rsk_{key_id}_{secret}", record

    def revoke(self, key_id: str) -> KeyRecord:
        """Mark ``key_id`` revoked (idempotent); NotFoundError for an unknown id."""
        with self._locked() as records:
            record = records.get(key_id)
            if record is None:
                raise NotFoundError(f"no API key with id {key_id!r}; see `ragstrata keys list`")
            records[key_id] = revoked = _replace_revoked(record)
        return revoked

    def records(self) -> list[KeyRecord]:
        """Every key, revoked ones included, oldest first."""
        with self._mutex:
            self._refresh()
            return sorted(self._records.values(), key=lambda r: (r.created, r.key_id))

    # ------------------------------------------------------------------ requests
    def verify(self, presented: str, *, client: str = "") -> Principal:
        """The principal of a presented key, sent from address ``client``.

        Verified keys are cached until the keys file changes (no scrypt, no budget). Raises
        AuthenticationError for a malformed, unknown, revoked or wrong key (the message never
        says which, nor echoes the key); RateLimitedError, before hashing, while the key id's
        or the address's failure budget is spent.
        """
        match = _KEY_RE.fullmatch(presented.strip())
        if match is None:
            raise AuthenticationError("invalid API key")
        fingerprint = hashlib.sha256(presented.strip().encode("ascii")).digest()
        key_id = match.group(1)
        with self._mutex:
            self._refresh()
            cached = self._verified.get(fingerprint)
            if cached is not None:
                return cached[0]
            record = self._records.get(key_id)
        wait_client = self._by_client.blocked(client)
        if wait_client > 0:
            raise RateLimitedError(
                f"too many failed API key attempts from this address; retry in {wait_client:.0f} s",
                retry_after_s=wait_client,
            )
        if record is None or record.revoked:
            self._by_client.fail(client)
            raise AuthenticationError("invalid API key")
        # a key id's spent budget holds back addresses that failed recently, not a clean one:
        # the key's owner still gets in while someone else floods its id
        wait_key = self._by_key.blocked(key_id) if self._by_client.failed_recently(client) else 0
        if wait_key > 0:
            raise RateLimitedError(
                f"too many failed attempts for API key {key_id}; retry in {wait_key:.0f} s",
                retry_after_s=wait_key,
            )
        # scrypt outside the mutex: ~50 ms of CPU that other requests need not wait for
        computed = _hash(match.group(2), bytes.fromhex(record.salt))
        if not hmac.compare_digest(computed, bytes.fromhex(record.hash)):
            self._by_key.fail(key_id)
            self._by_client.fail(client)
            raise AuthenticationError("invalid API key")
        principal = Principal(record.key_id, record.tenant, record.scopes)
        with self._mutex:
            if self._records.get(record.key_id) == record:  # not revoked meanwhile
                self._verified[fingerprint] = (principal, record)
        return principal

    # ------------------------------------------------------------------ file
    def _refresh(self) -> None:
        """Re-read the file when it changed (call with the mutex held)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            stamp = None
        else:
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        self._records = _read(self.path) if stamp is not None else {}
        # keep what was verified against a record that is still there, unchanged and valid
        self._verified = {
            fingerprint: (principal, record)
            for fingerprint, (principal, record) in self._verified.items()
            if self._records.get(record.key_id) == record and not record.revoked
        }
        self._stamp = stamp

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, KeyRecord]]:
        """Read-modify-write the file under an exclusive ``flock``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            records = _read(self.path) if self.path.exists() else {}
            yield records
            _write(self.path, records)
        with self._mutex:
            self._stamp = None
            self._records = {}
            self._refresh()


def _replace_revoked(record: KeyRecord) -> KeyRecord:
    data = asdict(record)
    data["revoked"] = True
    return KeyRecord(**data)


def _read(path: Path) -> dict[str, KeyRecord]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            r["key_id"]: KeyRecord(
                key_id=str(r["key_id"]),
                tenant=check_tenant(str(r["tenant"])),
                name=str(r.get("name", "")),
                scopes=tuple(str(s) for s in r["scopes"]),
                salt=str(r["salt"]),
                hash=str(r["hash"]),
                created=str(r["created"]),
                revoked=bool(r.get("revoked", False)),
            )
            for r in data["keys"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ServiceError(
            f"the keys file {path} is unreadable or corrupt ({exc}); restore it or move it away "
            "and create new keys with `ragstrata keys create`"
        ) from exc


def _write(path: Path, records: dict[str, KeyRecord]) -> None:
    payload = json.dumps(
        {"version": 1, "keys": [asdict(r) | {"scopes": list(r.scopes)} for r in records.values()]},
        indent=1,
    )
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
