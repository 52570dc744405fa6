"""Write TraceLens's operator performance figures on real traces with shapes, as reference files.

Run it with the Python of a separate virtual environment holding TraceLens (source at
``../shared/peers/TraceLens-171dd74.tar.gz``; see ``docs/semantics.md``)::

    python3 -m venv .venv-tracelens
    .venv-tracelens/bin/pip install pandas numpy orjson openpyxl tabulate tqdm
    .venv-tracelens/bin/pip install --no-deps ../shared/peers/TraceLens-171dd74.tar.gz
    .venv-tracelens/bin/python scripts/tracelens_reference.py [--out tests/golden/tracelens]

For each folder it writes ``<out>/<folder>.csv``: one row per CPU operator TraceLens has a
performance model for (``TreePerfAnalyzer.build_df_perf_metrics``, forward figures), with
its External id, GFLOPS, data moved, kernel time and TFLOP/s, TB/s. It never
imports jupyter_traceview: these are TraceLens's numbers, untouched. The test
``tests/analysis/perfmodel/test_tracelens.py`` compares ours with them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from scripts.trace_folders import FOLDERS  # noqa: E402  (plain paths: no jupyter_traceview)

#: The folders whose operators carry shapes (record_shapes=True), and the comparison's.
TRACELENS_FOLDERS = ("h100_bert_small", "dlrm_8rank_v100")
COLUMNS = {
    "name": "name",
    "external_id": "external_id",
    "GFLOPS": "gflops",
    "Data Moved (MB)": "data_moved_mb",
    "Kernel Time (µs)": "kernel_time_us",
    "TFLOPS/s": "tflops",
    "TB/s": "tbps",
}


def reference(path: Path) -> object:
    import pandas as pd
    from TraceLens import TreePerfAnalyzer

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analyzer = TreePerfAnalyzer.from_file(profile_filepath=str(path))
        known = set(analyzer.op_to_perf_model_class_map)
        events = [e for e in analyzer.tree.events if e.get("cat") == "cpu_op" and e["name"] in known]
        frame = analyzer.build_df_perf_metrics(events, bwd=False)
    out = pd.DataFrame({v: frame[k] for k, v in COLUMNS.items()})
    return out.sort_values(["external_id", "name"]).reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "tracelens")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in TRACELENS_FOLDERS:
        folder = FOLDERS[name]
        files = sorted(folder.glob("*.json*"))
        frame = reference(files[0])  # one rank: the model does not depend on the rank
        target = args.out / f"{name}.csv"
        frame.to_csv(target, index=False, float_format="%.12g")
        print(target, len(frame), "operators")


if __name__ == "__main__":
    main()
