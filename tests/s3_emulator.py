"""A local S3 emulator (moto's server: ``moto[server]``, in the test extra) for the tests, the
benchmarks and the UI tests: one way to start it on a free port, wait for it and stop it.

    with s3_emulator() as endpoint:                          # a thread of this process
        s3 = client(endpoint)
    with s3_emulator(auth=True) as endpoint: ...             # its own process, checking credentials
    with s3_emulator(process=True) as endpoint: ...          # its own process (benchmarks: no GIL shared)

    python -m tests.s3_emulator --port 8890 --bucket tv-ui --put runs/small/rank-0.json=tests/data/a.json

The command line (the UI tests start it from ui-tests/tests/remote.spec.ts) fills a bucket,
prints ``ready <endpoint>`` and serves until its standard input closes (its parent ended) or
it gets SIGTERM. Imported as ``tests.s3_emulator`` (the repository root on ``sys.path``: pytest's
``pythonpath``, the benchmark scripts' own ``sys.path`` entry); moto and boto3 are imported only
when an emulator starts, so that collecting a test module costs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["client", "free_port", "s3_emulator"]

HOST = "127.0.0.1"
REGION = "us-east-1"
#: Longest wait for an emulator's process to accept connections (s).
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port free on this machine now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    """Return once ``port`` accepts connections; RuntimeError if ``process`` exits first or it takes too long."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            socket.create_connection((HOST, port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"moto's S3 server exited with status {process.returncode}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"moto's S3 server did not listen on port {port} within {START_TIMEOUT_S:g} s"
                ) from None
            time.sleep(0.05)


@contextlib.contextmanager
def s3_emulator(*, port: int | None = None, process: bool = False, auth: bool = False) -> Iterator[str]:
    """An S3 emulator on ``port`` (a free one by default) while the block runs; yields its endpoint URL.

    ``process``: in its own process (``python -m moto.server``) rather than a thread of this
    one. ``auth``: it checks credentials (moto's IAM authentication: every key is unknown, so
    every request is denied); always its own process, as moto reads that setting at import.
    """
    port = free_port() if port is None else port
    endpoint = f"http://{HOST}:{port}"
    if not (process or auth):
        from moto.server import ThreadedMotoServer

        server = ThreadedMotoServer(ip_address=HOST, port=port, verbose=False)
        server.start()
        try:
            yield endpoint
        finally:
            server.stop()
        return
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"} if auth else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, proc)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def client(endpoint: str, *, key: str = "testing", secret: str = "testing") -> Any:
    """A boto3 S3 client of the emulator at ``endpoint`` (moto takes any key unless ``auth``)."""
    import boto3

    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name=REGION
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Serve a local S3 emulator with a bucket filled from local files.")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--put", action="append", default=[], metavar="KEY=PATH", help="upload PATH as KEY (repeatable)")
    a = p.parse_args(argv)
    with s3_emulator(port=a.port) as endpoint:
        s3 = client(endpoint)
        s3.create_bucket(Bucket=a.bucket)
        for item in a.put:
            key, sep, path = item.partition("=")
            if not sep:
                p.error(f"--put takes KEY=PATH, got {item!r}")
            s3.upload_file(path, a.bucket, key)
        print(f"ready {endpoint}", flush=True)
        for _ in sys.stdin:  # until the parent closes our stdin (or ends)
            pass


if __name__ == "__main__":
    main()
