"""The sidebar's remote roots (``c.TraceviewServer.remote_roots``) through a real Jupyter
server, against a local S3 emulator (moto's server): the listing, one run for the load code,
URLs outside the roots refused, a denied bucket named, and the configured secret never in an
answer or a log line."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

import jupyter_traceview as tv
from jupyter_traceview.server.remote import check_inside, check_root, remote_entry, remote_run, scrubbed
from jupyter_traceview.server.runs import PathRefused
from tests import kineto_builder as kb
from tests.s3_emulator import client, free_port, s3_emulator
from tests.server.test_handlers import command, poll

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
pytest.importorskip("boto3")

SECRET = "s3cr3t-of-the-server-config"
ROOT = "s3://runs/team"


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server: the sample as s3://runs/team/dlrm/, a small run two folders deeper,
    a hidden folder and a non-trace object; another bucket holding a run too."""
    with s3_emulator() as endpoint:
        s3 = client(endpoint, key="k", secret=SECRET)
        for bucket in ("runs", "other"):
            s3.create_bucket(Bucket=bucket)
        for f in sorted(Path(tv.sample_path()).iterdir()):
            s3.upload_file(str(f), "runs", f"team/dlrm/{f.name}")
        small = kb.write(tmp_path_factory.mktemp("small") / "rank-0.json", _small_doc())
        s3.upload_file(str(small), "runs", "team/nested/a/run1/rank-0.json")
        s3.upload_file(str(small), "runs", "team/.hidden/rank-0.json")
        s3.put_object(Bucket="runs", Key="team/notes.txt", Body=b"not a trace")
        s3.upload_file(str(small), "runs", "teamx/run/rank-0.json")
        s3.upload_file(str(small), "other", "team/run/rank-0.json")
        yield endpoint


def _small_doc() -> dict[str, Any]:
    """The small run's one rank (s3://runs/team/nested/a/run1/rank-0.json)."""
    return kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=0)


def _options(endpoint: str) -> dict[str, Any]:
    return {
        "key": "testing-key",
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }


@pytest.fixture
def denied_endpoint() -> Iterator[str]:
    """A second emulator checking credentials (moto's IAM auth on): ours are unknown there."""
    with s3_emulator(auth=True) as endpoint:
        yield endpoint


@pytest.fixture
def remote_mode() -> str:
    """Which emulator the server's root is on: "open" (s3_endpoint) or "denied"; "stuck": the
    open one with a short time limit; "unreachable": none; "none": no remote roots (parametrized)."""
    return "open"


@pytest.fixture
def jp_server_config(
    jp_server_config: dict, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, remote_mode: str
) -> dict:
    """The extension with one remote root; its credentials only in the server's configuration
    (none in the environment)."""
    import s3fs

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    s3fs.S3FileSystem.clear_instance_cache()
    if remote_mode == "none":
        return jp_server_config
    denied = remote_mode == "denied"
    if remote_mode == "unreachable":  # nothing listens there; one attempt, not botocore's five
        options = {**_options(f"http://127.0.0.1:{free_port()}"), "config_kwargs": {"retries": {"max_attempts": 1}}}
    else:
        options = _options(request.getfixturevalue("denied_endpoint" if denied else "s3_endpoint"))
    config = dict(jp_server_config)
    config["TraceviewServer"] = {
        "remote_roots": [ROOT, "nosuch://bucket/x"] if not denied else ["s3://private/runs"],
        "remote_storage_options": options,
        "remote_timeout_s": 0.2 if remote_mode == "stuck" else 60.0,
    }
    return config


async def _get(fetch: Any, *parts: str, params: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    try:
        r = await fetch("traceview", "api", *parts, params=params or {})
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.code, json.loads(exc.response.body)
    return r.code, json.loads(r.body)


async def test_the_listing_names_the_runs_under_the_root(jp_fetch: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    code, body = await _get(jp_fetch, "remote", "runs")
    assert code == 200
    by_url = {r["url"]: r for r in body["runs"]}
    assert set(by_url) == {f"{ROOT}/dlrm", f"{ROOT}/nested/a/run1"}
    dlrm = by_url[f"{ROOT}/dlrm"]
    sizes = [f.stat().st_size for f in Path(tv.sample_path()).iterdir()]
    assert (dlrm["name"], dlrm["kind"], dlrm["root"]) == ("dlrm", "folder", ROOT)
    assert (dlrm["files"], dlrm["size"]) == (len(sizes), sum(sizes))
    assert dlrm["mtime"] > 0 and body["truncated"] is False
    # The unknown scheme is one error naming its URL; the other root is still listed.
    assert "ListObjectsV2" in caplog.text  # the store's client logs are captured (and hold no secret)
    assert [e["root"] for e in body["errors"]] == ["nosuch://bucket/x"]
    assert "unknown URL scheme 'nosuch'" in body["errors"][0]["message"]
    # A folder under the root only; a URL outside it refused.
    code, body = await _get(jp_fetch, "remote", "runs", params={"root": f"{ROOT}/nested"})
    assert code == 200 and [r["url"] for r in body["runs"]] == [f"{ROOT}/nested/a/run1"]
    code, body = await _get(jp_fetch, "remote", "runs", params={"root": "s3://other/team"})
    assert code == 403
    assert SECRET not in caplog.text


async def test_a_new_run_shows_at_the_next_listing(jp_fetch: Any, s3_endpoint: str) -> None:
    params = {"root": f"{ROOT}/nested"}
    _, before = await _get(jp_fetch, "remote", "runs", params=params)
    s3 = client(s3_endpoint, key="k", secret=SECRET)
    s3.copy_object(Bucket="runs", Key="team/nested/b/rank-0.json", CopySource="runs/team/nested/a/run1/rank-0.json")
    try:
        _, after = await _get(jp_fetch, "remote", "runs", params=params)
    finally:
        s3.delete_object(Bucket="runs", Key="team/nested/b/rank-0.json")
    assert {r["url"] for r in after["runs"]} - {r["url"] for r in before["runs"]} == {f"{ROOT}/nested/b"}


async def test_one_run_gives_the_url_its_load_code_loads(jp_fetch: Any, s3_endpoint: str) -> None:
    code, row = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/dlrm/"})
    assert code == 200
    assert row["url"] == f"{ROOT}/dlrm" and row["kind"] == "folder" and row["files"] == 8
    # The sidebar's code is tv.load(row["url"]) in the kernel, with the kernel's own credentials.
    trace = tv.load(row["url"], cache=False, ranks=[0], storage_options=_options(s3_endpoint))
    assert trace.ranks == (0,)
    code, one = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/nested/a/run1/rank-0.json"})
    assert code == 200 and one["kind"] == "file" and one["name"] == "rank-0.json"
    code, body = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/notes.txt"})
    assert code == 400 and "is not a trace file" in body["message"]
    code, body = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/nested"})
    assert code == 400 and "holds no trace files" in body["message"]
    code, body = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/gone"})
    assert code == 422 and body["message"].startswith(f"{ROOT}/gone: no such object")


async def test_a_remote_run_opens_as_a_local_one(
    jp_fetch: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The sidebar's Open: the dashboard's commands name the run by its URL; the server's worker
    # reads the objects with the server's options (the environment has no credentials).
    from jupyter_traceview.dashboard.data import DashboardData

    caplog.set_level(logging.DEBUG)
    url = f"{ROOT}/nested/a/run1"
    kb.write(tmp_path / "run1" / "rank-0.json", _small_doc())
    local = DashboardData(tv.load(tmp_path / "run1", cache=False))  # named after its folder, as the remote run
    payload, _ = await command(jp_fetch, url, "_payload")
    assert payload["source"] == url
    expected = local.payload()
    assert {k: v for k, v in payload.items() if k != "source"} == {k: v for k, v in expected.items() if k != "source"}
    state, _ = await command(jp_fetch, url, "_timeline")
    assert state["state"]["ranks"] == [0]
    _, body = await poll(
        jp_fetch, "traceview", "api", "run", params={"path": url + "/"}, until=lambda r, b: r.code == 200
    )
    assert body["path"] == url and body["data"]["ranks"] == [0] and body["data"]["source"] == url
    # Outside the roots, or a local run's action: refused; nothing read.
    for params, want in (({"path": "s3://other/team/run"}, 403), ({"path": f"{ROOT}/nested"}, 400)):
        code, answer = await _get(jp_fetch, "run", params=params)
        assert code == want and SECRET not in json.dumps(answer)
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("traceview", "api", "baseline", method="POST", body=b"", params={"path": url})
    assert err.value.code == 400 and "read-only" in json.loads(err.value.response.body)["message"]  # type: ignore[union-attr]
    assert SECRET not in caplog.text


def test_a_remote_entry_names_exactly_the_objects_found(s3_endpoint: str) -> None:
    options = _options(s3_endpoint)
    entry = remote_entry(remote_run(ROOT, f"{ROOT}/dlrm", options))
    names = sorted(f.name for f in Path(tv.sample_path()).iterdir())
    assert (entry.path, entry.kind) == (f"{ROOT}/dlrm", "folder")
    assert entry.files == tuple(f"{ROOT}/dlrm/{n}" for n in names)
    assert [s[0] for s in entry.signature] == list(entry.files)
    assert all(str(s[2]).startswith("ETag=") for s in entry.signature)
    one = remote_entry(remote_run(ROOT, f"{ROOT}/dlrm/{names[0]}", options))
    assert (one.kind, one.files) == ("file", (f"{ROOT}/dlrm/{names[0]}",))
    # A changed object is another run (its ETag is part of the signature).
    s3 = client(s3_endpoint, key="k", secret=SECRET)
    key = "team/changing/rank-0.json"
    try:
        s3.put_object(Bucket="runs", Key=key, Body=json.dumps(_small_doc()).encode())
        before = remote_entry(remote_run(ROOT, f"{ROOT}/changing", options))
        s3.put_object(Bucket="runs", Key=key, Body=json.dumps(_small_doc()).encode() + b"\n")
        after = remote_entry(remote_run(ROOT, f"{ROOT}/changing", options))
    finally:
        s3.delete_object(Bucket="runs", Key=key)
    assert before.files == after.files and before.signature != after.signature


def test_analysis_errors_never_carry_the_options() -> None:
    from jupyter_traceview.server.worker import _message

    exc = tv.TraceFormatError("s3://runs/team/x", f"refused with secret={SECRET}", "Check it")
    message = _message(exc, "/srv", {"secret": SECRET})
    assert message.startswith("s3://runs/team/x: refused with secret=***") and SECRET not in message


@pytest.mark.parametrize(
    "url",
    [
        "s3://other/team/run",  # another bucket
        "s3://runs/teamx/run",  # a sibling prefix
        "s3://runs/team/../teamx/run",
        "s3://runs/team/%2e%2e/teamx/run",
        "gs://runs/team/dlrm",  # another scheme
        f"s3://k:{SECRET}@runs/team/dlrm",  # a user in the URL
        "s3://runs/team/dlrm?versionId=1",
        "runs/team/dlrm",  # not a URL
        "",
    ],
)
async def test_urls_outside_the_roots_are_refused(jp_fetch: Any, url: str) -> None:
    code, body = await _get(jp_fetch, "remote", "run", params={"url": url})
    assert code in (400, 403)
    assert SECRET not in json.dumps(body)


def test_the_checks_on_their_own() -> None:
    assert check_root("S3://runs//team/") == "s3://runs/team"
    for bad in ("runs/team", "s3://u:p@runs/team", "s3://runs/../x", "s3://?a=b"):
        with pytest.raises(ValueError):
            check_root(bad)
    assert check_inside([ROOT], "s3://runs/team/dlrm/") == (ROOT, "s3://runs/team/dlrm")
    assert check_inside([ROOT], ROOT) == (ROOT, ROOT)
    with pytest.raises(PathRefused):
        check_inside([ROOT], "s3://runs/te")
    message = f"failed with secret={SECRET} at http://e"
    assert (
        scrubbed(message, {"secret": SECRET, "client_kwargs": {"token": "tok-123"}})
        == "failed with secret=*** at http://e"
    )


@pytest.mark.parametrize("remote_mode", ["denied"])
async def test_a_denied_bucket_is_one_error_naming_the_url(
    jp_fetch: Any, caplog: pytest.LogCaptureFixture, remote_mode: str
) -> None:
    caplog.set_level(logging.DEBUG)
    code, body = await _get(jp_fetch, "remote", "runs")
    assert code == 200 and body["runs"] == []
    [error] = body["errors"]
    assert error["root"] == "s3://private/runs"
    assert error["message"].startswith("s3://private/runs: access denied")
    code, body = await _get(jp_fetch, "remote", "run", params={"url": "s3://private/runs/a"})
    assert code == 422 and body["message"].startswith("s3://private/runs/a: access denied")
    code, body = await _get(jp_fetch, "run", params={"path": "s3://private/runs/a"})  # Open
    assert code == 422 and body["message"].startswith("s3://private/runs/a: access denied")
    assert SECRET not in json.dumps(body) and SECRET not in caplog.text


async def test_remote_endpoints_require_authentication(jp_fetch: Any) -> None:
    for parts, params in ((("remote", "runs"), {}), (("remote", "run"), {"url": f"{ROOT}/dlrm"})):
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch("traceview", "api", *parts, params=params, headers={"Authorization": ""})
        assert err.value.code in (401, 403)


@pytest.mark.parametrize("remote_mode", ["stuck"])
async def test_a_store_that_does_not_answer_is_a_timeout(
    jp_fetch: Any, monkeypatch: pytest.MonkeyPatch, remote_mode: str
) -> None:
    from jupyter_traceview.server import handlers

    release = threading.Event()

    def stuck(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return [], False

    monkeypatch.setattr(handlers, "find_remote_runs", stuck)
    try:
        code, body = await _get(jp_fetch, "remote", "runs")
    finally:
        release.set()
    assert code == 200 and body["runs"] == []
    assert body["errors"] == [
        {"root": r, "message": f"{r}: the store did not answer within 0.2 s"} for r in (ROOT, "nosuch://bucket/x")
    ]


@pytest.mark.parametrize("remote_mode", ["none"])
async def test_without_remote_roots_nothing_is_listed_or_reachable(jp_fetch: Any, remote_mode: str) -> None:
    code, body = await _get(jp_fetch, "remote", "runs")
    assert (code, body) == (200, {"runs": [], "truncated": False, "errors": []})
    code, body = await _get(jp_fetch, "remote", "run", params={"url": f"{ROOT}/dlrm"})
    assert code == 403 and "not inside a remote root" in body["message"]


@pytest.mark.parametrize("remote_mode", ["unreachable"])
async def test_an_unreachable_store_is_one_error_naming_the_url(jp_fetch: Any, remote_mode: str) -> None:
    code, body = await _get(jp_fetch, "remote", "runs")
    assert code == 200 and body["runs"] == []
    error = next(e for e in body["errors"] if e["root"] == ROOT)
    # (The endpoint, an option of the server's configuration, is scrubbed like every option.)
    assert error["message"].startswith(f"{ROOT}: the store cannot be reached at ***. Check the endpoint")
    code, body = await _get(jp_fetch, "run", params={"path": f"{ROOT}/dlrm"})  # Open
    assert code == 422 and body["message"].startswith(f"{ROOT}/dlrm: the store cannot be reached")
    assert SECRET not in json.dumps(body)
