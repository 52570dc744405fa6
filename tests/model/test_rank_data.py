"""RankData's tables: a frame, or a Deferred built on first read (model/rank_data.py)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pandas as pd
import pytest

from jupyter_traceview.model.rank_data import Deferred, RankData, RankMeta, built, replaced, when_built


def _rank(builds: list[str]) -> RankData:
    def table(name: str) -> Deferred:
        def build() -> pd.DataFrame:
            builds.append(name)
            return pd.DataFrame({"eid": [1, 2, 3]}) if name == "events" else pd.DataFrame({"eid": [7]})

        return Deferred(build)

    return RankData(
        meta=RankMeta(rank=0, path="r0.json"), events=table("events"), gpu_args=table("gpu_args"), comms=table("comms")
    )


def test_a_table_reads_as_its_frame_built_once() -> None:
    builds: list[str] = []
    d = _rank(builds)
    assert builds == [] and not built(d, "events")
    events = d.events
    assert isinstance(events, pd.DataFrame) and events["eid"].tolist() == [1, 2, 3]
    assert d.events is events and builds == ["events"] and built(d, "events")


def test_missing_tables_default_to_fresh_empty_ones() -> None:
    builds: list[str] = []
    a, b = _rank(builds), _rank(builds)
    assert len(a.memory) == 0 and "device_type" in a.memory.columns
    assert len(a.op_args) == 0 and "input_dims" in a.op_args.columns
    assert a.memory is not b.memory, "not one frame shared by every rank"
    with pytest.raises(TypeError, match="events"):
        RankData(meta=RankMeta(rank=0, path="x"))  # type: ignore[call-arg]


def test_the_tables_stay_frozen() -> None:
    d = _rank([])
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.events = pd.DataFrame()  # type: ignore[misc]


def test_replaced_shares_the_tables_not_built_and_dataclasses_replace_builds_them() -> None:
    builds: list[str] = []
    d = _rank(builds)
    e = replaced(d, meta=RankMeta(rank=3, path="r0.json"))
    assert e.meta.rank == 3 and builds == []
    assert e.events is d.events and builds == ["events"], "one table, built once for both"
    f = dataclasses.replace(d, meta=RankMeta(rank=4, path="r0.json"))
    assert sorted(builds) == ["comms", "events", "gpu_args"] and f.comms is d.comms


def test_pickles_and_copies_carry_built_frames() -> None:
    builds: list[str] = []
    d = _rank(builds)
    back = pickle.loads(pickle.dumps(d))
    assert sorted(builds) == ["comms", "events", "gpu_args"]
    assert not any(isinstance(v, Deferred) for v in vars(back).values())
    assert back.events["eid"].tolist() == [1, 2, 3]
    deep = copy.deepcopy(_rank(builds))
    assert not any(isinstance(v, Deferred) for v in vars(deep).values()) and deep.comms["eid"].tolist() == [7]


def test_when_built_runs_before_other_threads_see_the_table() -> None:
    builds: list[str] = []
    d = _rank(builds)
    got: list[pd.DataFrame] = []
    when_built(d, "events", got.append)
    assert got == []
    events = d.events
    assert len(got) == 1 and got[0] is events
    when_built(d, "events", got.append)  # built already: now
    assert len(got) == 2 and got[1] is events
    plain = RankData(meta=d.meta, events=events, gpu_args=events, comms=events)
    when_built(plain, "comms", got.append)
    assert len(got) == 3


def test_a_failed_build_is_not_kept() -> None:
    attempts: list[int] = []

    def build() -> pd.DataFrame:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("gone")
        return pd.DataFrame({"eid": [1]})

    table = Deferred(build)
    with pytest.raises(OSError):
        table.get()
    assert not table.built
    assert table.get()["eid"].tolist() == [1] and len(attempts) == 2
