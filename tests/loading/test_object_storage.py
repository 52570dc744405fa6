"""Traces and datasets in object storage (fsspec URLs), against a local S3 emulator (moto's
server on a free port): the same tables as from a local folder, the cache keyed by the
object's ETag, and bad input (unknown scheme, no credentials, a denied or missing bucket)
as one error naming the URL without secrets."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.cli import main
from jupyter_traceview.loading.storage import redacted

# find_spec here, the imports in the fixture and tests: importing s3fs, moto's server and boto3
# (~0.7 s of CPU) at collection would cost every xdist worker that time, not only the one that
# runs these tests.
pytestmark = pytest.mark.skipif(
    any(find_spec(m) is None for m in ("s3fs", "moto", "boto3")), reason="s3fs, moto or boto3 is not installed"
)

SECRET = "s3cr3t-never-shown"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server for this module, with the sample uploaded as s3://runs/dlrm/."""
    from tests.s3_emulator import client, s3_emulator

    with s3_emulator() as endpoint:
        s3 = client(endpoint, secret=SECRET)
        s3.create_bucket(Bucket="runs")
        for f in sorted(Path(tv.sample_path()).iterdir()):
            s3.upload_file(str(f), "runs", f"dlrm/{f.name}")
        yield endpoint


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The usual environment of an S3 user: credentials and the endpoint in AWS_* variables."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    _forget_filesystems()
    return s3_endpoint


def _forget_filesystems() -> None:
    """fsspec keeps filesystems by their options: a test's environment must make a new one."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def test_a_folder_in_s3_loads_as_from_disk(s3: str, dlrm: tv.Trace, tmp_path: Path) -> None:
    trace = tv.load("s3://runs/dlrm/", cache=False)
    assert trace.ranks == dlrm.ranks
    for r in (0, 5):
        pd.testing.assert_frame_equal(trace.events(r), dlrm.events(r))
    pd.testing.assert_frame_equal(tv.summary(trace), tv.summary(dlrm))
    assert trace.meta(0).path.startswith("s3://runs/dlrm/")
    one = tv.load("s3://runs/dlrm/" + Path(dlrm.meta(3).path).name, cache=False)
    assert one.ranks == (3,)


def test_the_cache_keys_objects_by_etag_not_credentials(s3: str, dlrm: tv.Trace, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tv.load("s3://runs/dlrm/", cache=cache, ranks=[1, 2])
    entries = {p.name for p in cache.iterdir() if p.is_dir()}
    assert len(entries) == 2
    again = tv.load("s3://runs/dlrm/", cache=cache, ranks=[1, 2])  # read from the cache
    assert {p.name for p in cache.iterdir() if p.is_dir()} == entries
    pd.testing.assert_frame_equal(tv.summary(again), tv.summary(dlrm, ranks=[1, 2]))
    for path in cache.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    # A changed object (a new ETag) is a new entry.
    name = Path(dlrm.meta(1).path).name
    import boto3

    c = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    c.upload_file(str(Path(tv.sample_path()) / Path(dlrm.meta(2).path).name), "runs", f"changed/{name}")
    tv.load(f"s3://runs/changed/{name}", cache=cache)
    before = {p.name for p in cache.iterdir() if p.is_dir()}
    c.upload_file(str(Path(tv.sample_path()) / name), "runs", f"changed/{name}")
    _forget_filesystems()
    assert tv.load(f"s3://runs/changed/{name}", cache=cache).ranks == (1,)
    assert len({p.name for p in cache.iterdir() if p.is_dir()} - before) == 1


def test_storage_options_are_passed_and_never_shown(s3: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    options = {"key": "testing", "secret": SECRET, "client_kwargs": {"endpoint_url": s3}}
    trace = tv.load("s3://runs/dlrm/", cache=False, ranks=[4], storage_options=options)
    assert trace.ranks == (4,)
    with pytest.raises(tv.TraceFormatError) as err:
        tv.load("s3://no-such-bucket/run/", storage_options=options)
    assert str(err.value).startswith("s3://no-such-bucket/run/: no such object, folder or bucket")
    assert SECRET not in str(err.value) and SECRET not in repr(err.value)


def test_bad_urls_get_one_clear_error(s3: str) -> None:
    with pytest.raises(tv.TraceFormatError, match=r"^nosuch://a/b: unknown URL scheme 'nosuch'"):
        tv.load("nosuch://a/b")
    with pytest.raises(tv.TraceFormatError, match=r"^s3://missing-bucket/x: no such object, folder or bucket"):
        tv.load("s3://missing-bucket/x")
    with pytest.raises(tv.TraceFormatError, match=r"^s3://runs/nothing/: no such object"):
        tv.load("s3://runs/nothing/")
    assert redacted(f"https://user:{SECRET}@host/run/a.json?sig={SECRET}") == "https://host/run/a.json"


def test_missing_credentials_are_named(s3: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    _forget_filesystems()
    with pytest.raises(tv.TraceFormatError, match=r"^s3://runs/dlrm/: no credentials found"):
        tv.load("s3://runs/dlrm/")


def test_a_denied_bucket_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.s3_emulator import s3_emulator

    # A second emulator that checks credentials (moto's IAM auth on): ours are unknown there.
    with s3_emulator(auth=True) as endpoint:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        _forget_filesystems()
        with pytest.raises(tv.TraceFormatError) as err:
            tv.load("s3://private/run/")
        assert str(err.value).startswith("s3://private/run/: access denied")
        assert SECRET not in str(err.value)


def test_an_unreachable_endpoint_is_named() -> None:
    from tests.s3_emulator import free_port

    port = free_port()  # nothing listens there
    options = {
        "key": "testing",
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
        "config_kwargs": {"retries": {"max_attempts": 1}},
    }
    with pytest.raises(tv.TraceFormatError) as err:
        tv.load("s3://runs/dlrm/", storage_options=options)
    assert str(err.value).startswith(f"s3://runs/dlrm/: the store cannot be reached at http://127.0.0.1:{port}")
    assert "AWS_ENDPOINT_URL" in str(err.value) and SECRET not in str(err.value)


def test_the_cli_reads_urls(s3: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["summary", "s3://runs/dlrm/", "--ranks", "0", "--no-cache"]) == 0
    assert "s3://runs/dlrm" in capsys.readouterr().out
    assert main(["summary", "nosuch://x/y", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "traceview: error: nosuch://x/y: unknown URL scheme 'nosuch'. Use a local path or an fsspec URL: "
        "s3://, gs://, az://, hf://, https://"
    ]
    out = tmp_path / "report.html"
    assert main(["report", "s3://runs/dlrm/", "--ranks", "0,1", "-q", "-o", str(out), "--no-cache"]) == 0
    assert out.stat().st_size > 0


def test_a_dataset_in_s3(s3: str, dlrm: tv.Trace) -> None:
    dest = tv.export(dlrm.select(ranks=[0, 6]), "s3://runs/datasets/dlrm")
    back = tv.load(dest)
    assert back.ranks == (0, 6)
    pd.testing.assert_frame_equal(back.events(6), dlrm.events(6))
    pd.testing.assert_frame_equal(tv.summary(back), tv.summary(dlrm, ranks=[0, 6]))


@pytest.fixture
def cluster_client(s3: str) -> Iterator[object]:
    """Two single-threaded worker processes, started with the S3 environment (as a cluster's
    workers get theirs), that read from the emulator themselves."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_dask_workers_read_from_object_storage(
    cluster_client: object, dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from jupyter_traceview.loading import dask_engine

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("a rank was read in the notebook process")

    # The workers parse (their own processes); this process only lists the objects.
    monkeypatch.setattr(dask_engine, "read_file", not_here)
    trace = tv.load("s3://runs/dlrm/", engine="dask", client=cluster_client, cache=False, ranks=[0, 3, 7])
    assert type(trace).__name__ == "DaskTrace"
    local = dlrm.select(ranks=[0, 3, 7])
    assert trace.ranks == local.ranks
    for analysis in (tv.summary, tv.temporal_breakdown, tv.kernel_breakdown, tv.comm_comp_overlap):
        pd.testing.assert_frame_equal(analysis(trace), analysis(local))
    # The workers write the dataset, and read it back.
    dest = tv.export(trace, "s3://runs/datasets/from-workers")
    back = tv.load(dest, engine="dask", client=cluster_client)
    assert type(back).__name__ == "DaskTrace"
    pd.testing.assert_frame_equal(tv.summary(back), tv.summary(local))
    pd.testing.assert_frame_equal(back.events(7), dlrm.events(7))


def test_a_jax_xplane_in_s3_loads_as_from_disk(s3: str) -> None:
    pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof (jupyter_traceview[jax]) is not installed")
    import boto3

    from tests.loading.readers.test_jax import HOST_FILE, _counts

    xplane = HOST_FILE.parent / "host.xplane.pb"
    boto3.client("s3", endpoint_url=s3).upload_file(str(xplane), "runs", "jax/host.xplane.pb")
    trace = tv.load("s3://runs/jax/host.xplane.pb", cache=False)  # streamed to a scratch file for xprof
    assert trace.meta(0).path == "s3://runs/jax/host.xplane.pb"
    assert _counts(trace) == _counts(tv.load(xplane, cache=False))
