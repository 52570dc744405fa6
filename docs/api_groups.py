"""The API reference's topic groups: every public name of ``tv.`` in exactly one of them.

docs/conf.py writes one page per group (docs/api/<slug>.md) and, through autosummary, one page
per name from its docstring. tests/test_docs_site.py checks that every name of
``jupyter_traceview.__all__`` is listed here exactly once, so a new public name fails that
test until it is added to a group below. Plain Python, no import of the package: the test and
the Sphinx configuration both read it.
"""

from __future__ import annotations

from typing import NamedTuple


class Group(NamedTuple):
    slug: str  # the page's file name: docs/api/<slug>.md
    title: str
    intro: str  # one or two sentences, MyST Markdown
    names: tuple[str, ...]  # public names of ``tv.``, in reading order


GROUPS: tuple[Group, ...] = (
    Group(
        "loading",
        "Loading traces and the trace model",
        "Read PyTorch profiler (Kineto) traces, Nsight Systems SQLite exports and the bundled "
        "sample into a `Trace`: per-rank columnar tables, int64 nanoseconds "
        "(the columns: [the trace model](../schema.md)).",
        (
            "load",
            "sample_path",
            "clear_cache",
            "export",
            "sql",
            "Trace",
            "EventKind",
            "GpuClass",
            "Classifier",
            "align_clocks",
            "clock_alignment",
            "__version__",
        ),
    ),
    Group(
        "breakdowns",
        "Where the time goes: breakdowns",
        "Per-rank breakdowns of GPU time: busy, idle, compute, kernels, overlap, iterations, the "
        "critical path, and the annotations that caused them. Every analysis takes "
        "`ranks=`, `iterations=` and `time_range=`; times are `*_ns`, shares `*_pct`.",
        (
            "headline",
            "summary",
            "temporal_breakdown",
            "idle_time_breakdown",
            "kernel_breakdown",
            "kernel_duration_distribution",
            "concurrency",
            "kernel_overlap_stats",
            "critical_path",
            "iteration_stats",
            "efficiency",
            "utilization_heatmap",
            "kernel_pace",
            "op_kernels",
            "frequent_kernel_sequences",
            "user_annotation_breakdown",
            "nvtx_gpu_projection",
        ),
    ),
    Group(
        "communication",
        "Communication and stragglers",
        "Collectives across ranks: how much communication runs under compute, each collective "
        "call, and the ranks that arrive last.",
        ("comm_comp_overlap", "nccl_summary", "collective_calls", "stragglers"),
    ),
    Group(
        "host",
        "The host side: CPU operators, threads, launches",
        "What the CPU did: operators and their self time, the merged call tree, threads over "
        "time, host synchronisations, kernel launches and the launch queue.",
        (
            "cpu_op_breakdown",
            "call_tree",
            "thread_activity",
            "host_syncs",
            "kernel_launch_stats",
            "queue_length",
        ),
    ),
    Group(
        "memory",
        "Memory",
        "Allocations recorded with `profile_memory=True`: the memory timeline, its peaks and who "
        "held them, per-operator allocations, the allocator, out-of-memory events; and memory "
        "copies' bandwidth.",
        (
            "memory_timeline",
            "memory_peaks",
            "memory_peak_holders",
            "memory_by_operator",
            "memory_allocations",
            "memory_allocator_stats",
            "memory_oom_events",
            "memory_bandwidth",
        ),
    ),
    Group(
        "perfmodel",
        "Performance model: FLOPs, bytes, MFU",
        "Operator FLOPs and bytes from recorded shapes (`record_shapes=True`), achieved rates "
        "against the device's peaks, the roofline bound, and model FLOPs utilisation.",
        ("op_performance", "mfu", "peaks_table", "DevicePeaks"),
    ),
    Group(
        "diagnosis",
        "Diagnosis: findings",
        "Plain-language findings with their evidence, from a registry of rules.",
        ("findings", "FindingRules", "workload"),
    ),
    Group(
        "whatif",
        "What-if: what a fix would save",
        "Replay the trace's dependency graph with a change (syncs removed, kernels faster, "
        "communication overlapped, a straggler balanced...) and read each step's predicted time "
        "([What-if replay](../semantics.md#what-if-replay)).",
        ("what_if", "changes"),
    ),
    Group(
        "comparison",
        "Comparing runs",
        "What changed between two traces.",
        ("compare",),
    ),
    Group(
        "widgets",
        "Widgets and the notebook",
        "The timeline and the dashboard (anywidget widgets for JupyterLab, Notebook 7 and VS Code), "
        "and the IPython extension behind `%%traceprofile` and `%traceview`.",
        (
            "Dashboard",
            "Timeline",
            "TimelineSelection",
            "load_ipython_extension",
            "unload_ipython_extension",
        ),
    ),
    Group(
        "report",
        "Reports and exports",
        "The dashboard as one self-contained HTML file, and the trace with counter tracks for Perfetto.",
        ("write_report", "write_counters_trace"),
    ),
    Group(
        "errors",
        "Errors and warnings",
        "What `tv.` raises and warns: each message names the file or option, what is wrong and what to do.",
        ("TraceviewError", "TraceFormatError", "TraceSelectionError", "OptionError", "TraceviewWarning"),
    ),
)

#: The command line (``traceview``), documented from its argparse parser: a page of its own,
#: with no ``tv.`` name.
CLI = Group(
    "cli",
    "Command line: traceview",
    "`traceview` runs the main analyses from a shell; `PATH` is a trace file, a folder of rank "
    "traces or an Nsight Systems SQLite export. Errors print one line and exit with status 2.",
    (),
)
