"""classify._Matcher: the classifier's patterns matched as their alternation matches them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_traceview.model.classify import DEFAULT_COMMUNICATION, DEFAULT_MEMORY, DEFAULT_OTHER, _Matcher


def _joined(patterns: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


@pytest.mark.filterwarnings("ignore::FutureWarning")  # (re warns of "[[" that may mean a nested set)
@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(st.text(alphabet="ab^$.*+?|()[]{}\\: -#", max_size=6), max_size=5),
    st.lists(st.text(alphabet="ab^$.*()-: #", max_size=12), max_size=6),
)
def test_the_matcher_is_the_joined_regular_expression(patterns: list[str], names: list[str]) -> None:
    """Plain text (and ``^`` plus plain text) looked for without a regular expression matches
    exactly the names that the patterns' alternation finds."""
    try:
        for p in patterns:
            re.compile(p)  # (the Classifier refuses a pattern that does not compile alone)
        joined = _joined(patterns)
        matcher = _Matcher(patterns)
    except re.error:
        return  # (refused by the Classifier's check, or by the alternation, both ways)
    for name in [*names, *patterns, *(p.lstrip("^") for p in patterns)]:
        want = joined is not None and joined.search(name) is not None
        assert matcher.search(name) == want, (patterns, name)


def test_the_default_patterns_take_the_fast_ways() -> None:
    comm = _Matcher(DEFAULT_COMMUNICATION)
    xla = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
    assert comm.prefixes == ("nccl", "rccl", "hccl", "ccl_", "ccl::", "ucc_", *xla) and "ncclDevKernel" in comm.texts
    assert comm.regex is not None and comm.regex.pattern == "(?:(?:one|two)Shot(?:All)?Reduce)"
    assert _Matcher(DEFAULT_MEMORY).regex is None and _Matcher(DEFAULT_OTHER).prefixes[0] == "Stream Wait Event"
    names = [
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "void at::native::ncclKernel<int>(...)",
        "void twoShotAllReduce<float>",
        "oneShotReduce",
        "xnccl",
        "Memcpy HtoD (Pageable -> Device)",
        "Stream Wait Event",
        "a Stream Sync",
        "deep_ep::intranode::dispatch",
        "void my_ep::internode_ll::combine<8>",
        "void mscclpp::allreduce6<bf16>",
        "ccl_kernel_allreduce",
        "void ucc_ec_reduce",
        "nccl_ucc_x",
        "all-reduce-start.1",
        "fused-all-gather",
        "",
    ]
    for patterns in (DEFAULT_COMMUNICATION, DEFAULT_MEMORY, DEFAULT_OTHER):
        joined = _joined(list(patterns))
        assert joined is not None
        for name in names:
            assert _Matcher(patterns).search(name) == (joined.search(name) is not None), name


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(st.lists(st.text(alphabet="abkSI_:-( ", min_size=0, max_size=4), min_size=1, max_size=4), max_size=4),
    st.lists(st.text(alphabet="aAbBkKsSiI_:- \u017f\u212a\u0130\u0131é", max_size=12), max_size=8),
)
def test_case_insensitive_words_match_as_the_flag_does(groups: list[list[str]], names: list[str]) -> None:
    """``(?i:word|...)`` looked for in the lower-cased name (ASCII names) or by the regular
    expression (other names: the flag folds the long s, the Kelvin sign and the dotted and
    dotless i to ASCII letters) matches exactly the names the alternation finds."""
    patterns = [f"(?i:{'|'.join(words)})" for words in groups]
    try:
        joined = _joined(patterns)
    except re.error:
        return  # ("(" in a word: not a plain word, and not a pattern the Classifier takes)
    matcher = _Matcher(patterns)
    for name in [*names, *(w.upper() for ws in groups for w in ws)]:
        want = joined is not None and joined.search(name) is not None
        assert matcher.search(name) == want, (patterns, name)


def test_the_default_compute_patterns_are_words() -> None:
    """Every default compute pattern is a case-insensitive group of plain words: none is
    compiled unless a name is not ASCII."""
    from jupyter_traceview.model.classify import DEFAULT_COMPUTE

    m = _Matcher(DEFAULT_COMPUTE)
    assert m.regex is None and not m.prefixes and not m.texts and "gemm" in m.words and "at::native" in m.words
    assert "_folded_regex" not in m.__dict__
    assert m.search("void Cutlass_GEMM_kernel") and not m.search("myKernel")
    assert m.search("ſort_kernel") == (re.search("(?i:sort)", "ſort_kernel") is not None)
    assert "_folded_regex" in m.__dict__
