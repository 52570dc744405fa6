"""Object storage: fsspec URLs (``s3://``, ``gs://``, ``az://``, ``hf://``, ``https://``) as paths.

A path with a scheme is opened through fsspec (extra ``jupyter_traceview[cloud]``), with the
filesystem's usual credentials (``AWS_*`` variables and profiles for S3, ...) or the
``storage_options`` given; a plain path through the operating system. Credentials are never
kept by this module: errors name the URL :func:`redacted` (no user, password or query), and
the cache is keyed by what the store says of the object (its ETag or version), not by how it
was reached.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from typing import IO, Any

from ..errors import TraceFormatError

__all__ = [
    "DATASET_METADATA",
    "LocalFS",
    "RemotePath",
    "errors",
    "filesystem",
    "is_dataset",
    "is_url",
    "listing",
    "redacted",
    "version_of",
]

#: The metadata document at the root of a dataset written by ``tv.export`` (:mod:`.dataset`):
#: its presence makes a folder a dataset.
DATASET_METADATA = "traceview.json"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL (``scheme://...``; ``file://`` included)."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def redacted(url: str) -> str:
    """``url`` without what may be a secret: the user and password, the query (signed URLs,
    SAS tokens) and the fragment."""
    m = _SCHEME.match(url)
    if m is None:
        return url
    rest = url[m.end() :]
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    host, sep, path = rest.partition("/")
    if "@" in host:
        host = host.rsplit("@", 1)[1]
    return f"{m.group(1)}://{host}{sep}{path}"


def is_dataset(path: object, storage_options: dict[str, Any] | None = None) -> bool:
    """Whether ``path`` (a folder or URL) holds a dataset written by ``tv.export``."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    text = os.fspath(path)
    if not isinstance(text, str):
        return False
    if not is_url(text):
        return os.path.isfile(os.path.join(os.path.expanduser(text), DATASET_METADATA))
    fs, root = filesystem(text, storage_options)
    with errors(text):
        return bool(fs.exists(root.rstrip("/") + "/" + DATASET_METADATA))


class LocalFS:
    """The few filesystem calls the datasets make, on local paths (no fsspec needed)."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        os.makedirs(path, exist_ok=exist_ok)

    def rm(self, path: str, recursive: bool = False) -> None:
        if recursive and os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)

    def open(self, path: str, mode: str = "rb") -> IO[Any]:
        return open(path, mode)


def filesystem(path: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """The filesystem holding ``path`` and the path on it: fsspec's for a URL (an error
    naming the URL for an unknown scheme or a missing package), :class:`LocalFS` else."""
    if not is_url(path):
        return LocalFS(), os.path.expanduser(os.fspath(path))
    try:
        import fsspec.core
    except ImportError:
        raise TraceFormatError(
            redacted(path), "URLs need fsspec", "pip install 'jupyter_traceview[cloud]' (then restart the kernel)"
        ) from None
    scheme = path.split("://", 1)[0]
    try:
        fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    except ImportError as exc:
        raise TraceFormatError(
            redacted(path),
            f"{scheme}:// URLs need a package that is not installed ({exc.name or exc})",
            "pip install 'jupyter_traceview[cloud]' (s3fs, gcsfs, adlfs), then restart the kernel",
        ) from None
    except ValueError as exc:
        if "protocol" in str(exc).lower():
            raise TraceFormatError(
                redacted(path),
                f"unknown URL scheme {scheme!r}",
                "Use a local path or an fsspec URL: s3://, gs://, az://, hf://, https://",
            ) from None
        raise TraceFormatError(redacted(path), f"cannot be opened ({_clean(exc, path)})", "Check the URL") from None
    except TypeError as exc:  # an option the filesystem does not take
        raise TraceFormatError(
            redacted(path), f"storage_options not taken by {scheme}:// ({_clean(exc, path)})", "Check the options"
        ) from None
    return fs, str(root)


def _clean(exc: BaseException, url: str) -> str:
    """An exception's message without the URL's secrets (the URL given in it redacted)."""
    text = str(exc) or type(exc).__name__
    return text.replace(url, redacted(url)).strip()


#: Exceptions of the S3, GCS and Azure clients that mean "no credentials", by class name (not
#: imported: each client is optional).
_NO_CREDENTIALS = (
    "NoCredentialsError",
    "PartialCredentialsError",
    "DefaultCredentialsError",
    "ClientAuthenticationError",
)
#: ... and "the endpoint cannot be reached" (refused, unknown host, timed out), likewise.
_UNREACHABLE = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ClientConnectorError",
    "ServiceRequestError",
)
#: An endpoint's scheme and host in a client's message (a user and password before the host left out).
_ENDPOINT = re.compile(r"\b(https?)://(?:[^/\s@]*@)?([^/\s\"'?#@]+)")


@contextlib.contextmanager
def errors(url: str) -> Iterator[None]:
    """Turn a store's errors (no credentials, access denied, no such bucket or object) into one
    :class:`TraceFormatError` naming the URL without its secrets."""
    try:
        yield
    except TraceFormatError:
        raise
    except PermissionError:
        raise TraceFormatError(
            redacted(url),
            "access denied",
            "Check the credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID..., or storage_options=) and their permissions",
        ) from None
    except FileNotFoundError:
        raise TraceFormatError(redacted(url), "no such object, folder or bucket", "Check the URL") from None
    except Exception as exc:
        names = {c.__name__ for c in type(exc).__mro__}
        if names & set(_NO_CREDENTIALS):
            raise TraceFormatError(
                redacted(url),
                "no credentials found",
                "Set them as the store's client expects (AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                "GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*), or pass storage_options=",
            ) from None
        if names & set(_UNREACHABLE):
            m = _ENDPOINT.search(str(exc))
            raise TraceFormatError(
                redacted(url),
                "the store cannot be reached" + (f" at {m.group(1)}://{m.group(2)}" if m else ""),
                "Check the endpoint (AWS_ENDPOINT_URL, or endpoint_url in storage_options) and the network",
            ) from None
        if not is_url(url) or not names & {"ClientError", "HttpResponseError", "HttpError", "OSError"}:
            raise
        raise TraceFormatError(redacted(url), f"cannot be read ({_clean(exc, url)})", "Check the URL") from None


#: Reads of a remote object go through a read-ahead buffer of this many bytes (fsspec's
#: ``block_size``): a piece of the Kineto reader (4 MiB) is a few requests.
REMOTE_BLOCK_BYTES = 8 * 2**20


class RemotePath:
    """An object in storage, where the readers take a file's path: its URL (shown redacted),
    the options to reach it (never shown), what the store says identifies its content (ETag,
    version or generation), and its size.

    ``open()`` gives a file object reading it in blocks (:data:`REMOTE_BLOCK_BYTES`), never
    the whole object at once.
    """

    __slots__ = ("_options", "size", "url", "version")

    def __init__(self, url: str, size: int, version: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.size = size
        self.version = version
        self._options = dict(storage_options or {})

    @property
    def name(self) -> str:
        """The object's name (the last part of its key)."""
        return redacted(self.url).rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return redacted(self.url)

    def __repr__(self) -> str:
        return f"RemotePath({redacted(self.url)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and (self.url, self.version) == (other.url, other.version)

    def __hash__(self) -> int:
        return hash((self.url, self.version))

    def __reduce__(self) -> tuple[type[RemotePath], tuple[str, int, str, dict[str, Any]]]:
        # (to worker processes: the options travel in memory, as the load was given them)
        return (RemotePath, (self.url, self.size, self.version, self._options))

    def cache_identity(self) -> list[Any]:
        """What the cache keys the object by: its URL without secrets, its size and version."""
        return [redacted(self.url), self.size, self.version]

    def open(self) -> IO[bytes]:
        """A file object over the object, read in blocks; errors as :func:`errors` gives them."""
        fs, root = filesystem(self.url, self._options)
        with errors(self.url):
            fh: IO[bytes] = fs.open(root, "rb", block_size=REMOTE_BLOCK_BYTES, cache_type="readahead")
        return fh


def version_of(info: dict[str, Any]) -> str:
    """What identifies an object's content in a listing's entry: its version (S3 VersionId,
    GCS generation), else its ETag, else its modification time (and size, beside it in the key)."""
    for key in (
        "VersionId",
        "generation",
        "version_id",
        "ETag",
        "etag",
        "md5Hash",
        "LastModified",
        "last_modified",
        "mtime",
    ):
        value = info.get(key)
        if value not in (None, "", "null"):
            return f"{key}={value}"
    return ""


def listing(url: str, storage_options: dict[str, Any] | None = None) -> tuple[list[RemotePath], bool]:
    """The objects at ``url``: the object itself (False), or those directly under it as a
    folder (True); a :class:`TraceFormatError` naming the URL when there is nothing there."""
    fs, root = filesystem(url, storage_options)
    scheme = url.split("://", 1)[0]
    with errors(url):
        info = fs.info(root)
        if info.get("type") != "directory":
            return [RemotePath(url, int(info.get("size") or 0), version_of(info), storage_options)], False
        entries = fs.ls(root, detail=True)
    out = []
    for entry in sorted(entries, key=lambda e: str(e["name"])):
        if entry.get("type") == "directory":
            continue
        name = str(entry["name"])
        full = fs.unstrip_protocol(name) if hasattr(fs, "unstrip_protocol") else f"{scheme}://{name}"
        out.append(RemotePath(full, int(entry.get("size") or 0), version_of(entry), storage_options))
    return out, True
