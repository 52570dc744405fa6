"""classify._Matcher: the classifier's patterns matched as their alternation matches them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_traceview.model.classify import (
    _GUARDS,
    DEFAULT_COMMUNICATION,
    DEFAULT_COMMUNICATION_CONTEXT,
    DEFAULT_COMMUNICATION_FRAMES,
    DEFAULT_COMPUTE,
    DEFAULT_MEMORY,
    DEFAULT_OTHER,
    Classifier,
    _Matcher,
    _texts_of,
)


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
    # (?:one|two)Shot(?:All)?Reduce spells four texts: no regular expression is left.
    assert {"oneShotReduce", "oneShotAllReduce", "twoShotReduce", "twoShotAllReduce"} <= set(comm.texts)
    assert comm.regex is None and not comm.guarded
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
    m = _Matcher(DEFAULT_COMPUTE)
    assert m.regex is None and not m.prefixes and not m.texts and "gemm" in m.words and "at::native" in m.words
    assert "_folded_regex" not in m.__dict__
    assert m.search("void Cutlass_GEMM_kernel") and not m.search("myKernel")
    assert m.search("ſort_kernel") == (re.search("(?i:sort)", "ſort_kernel") is not None)
    assert "_folded_regex" in m.__dict__


_PIECES = st.sampled_from(
    ["a", "b", "_", ":", " ", "a?", "_?", "(?:a|b)", "(?:ab)?", "(?:|b_)", "(?:a|ba|)?", "^", "*", "."]
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(_PIECES, max_size=6), st.lists(st.text(alphabet="ab_: ", max_size=10), max_size=8))
def test_a_pattern_spelling_a_few_texts_matches_as_its_regular_expression(pieces: list[str], names: list[str]) -> None:
    """Plain text with groups of alternatives and optional parts is looked for as the texts it
    spells (``_texts_of``), which a name holds exactly where the regular expression finds it."""
    pattern = "".join(pieces)
    try:
        regex = re.compile(pattern)
    except re.error:
        return
    texts = _texts_of(pattern.removeprefix("^"))
    if texts is not None:
        assert all(regex.search(t) is not None for t in texts), pattern
    matcher = _Matcher([pattern])
    for name in [*names, *(texts or ())]:
        assert matcher.search(name) == (regex.search(name) is not None), (pattern, name)


def test_the_default_patterns_need_no_regular_expression_on_usual_names() -> None:
    """The default patterns compile nothing for the names of a usual trace: only the context
    pattern is a regular expression, searched only where a name holds one of its verbs."""
    assert _Matcher(DEFAULT_COMMUNICATION_FRAMES).regex is None
    assert "internode_ll_combine" in _Matcher(DEFAULT_COMMUNICATION_FRAMES).texts
    context = _Matcher(DEFAULT_COMMUNICATION_CONTEXT)
    assert context.regex is None and context.guarded == (DEFAULT_COMMUNICATION_CONTEXT[-1],)
    assert _texts_of("(?:inter|intra)node(?:_ll)?_(?:dispatch|combine)") is not None
    assert _texts_of("a*") is None and _texts_of("(?:a|b)+") is None and _texts_of("(?i:a)") is None
    clf = Classifier()
    assert clf.recognises("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)")
    assert not clf.recognises("void all_reduce_kernel<float>(float*)")  # (the guard let it through)


_VERB_BITS = st.sampled_from(
    [
        "all",
        "All",
        "ALL",
        "_",
        "to",
        "reduce",
        "Reduce",
        "gather",
        "scatter",
        "dispatch",
        "Combine",
        "x",
        "9",
        ":",
        " ",
        "\u017f",
        "\u212a",
        "-",
        "",
    ]
)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.lists(_VERB_BITS, max_size=6).map("".join), max_size=8))
def test_the_guarded_context_pattern_matches_as_its_regular_expression(names: list[str]) -> None:
    """A name without any of the guard's texts (ASCII, lower-cased) is never matched by the
    context pattern: the guard only saves compiling and searching it."""
    (pattern,) = _GUARDS
    regex = re.compile(pattern)
    matcher = _Matcher([pattern])
    for name in [*names, *_GUARDS[pattern], "nccl:all_reduce", "my_alltoallv", "ep.dispatch", "ReduceScatter_"]:
        assert matcher.search(name) == (regex.search(name) is not None), name
