"""classify.rules_key: the key under which the cache keeps a rank's GPU classes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from jupyter_traceview.model import classify
from jupyter_traceview.model.classify import Classifier, rules_key


def test_equal_classifiers_share_a_key_and_other_patterns_do_not() -> None:
    assert rules_key(Classifier()) == rules_key(Classifier())
    assert rules_key(Classifier()) != rules_key(Classifier().extend(communication=["gemm_1"]))
    assert rules_key(Classifier()) != rules_key(Classifier().extend(memory=["gemm_1"]))
    assert rules_key(Classifier()) != rules_key(Classifier().extend(other=["gemm_1"]))


def test_the_key_follows_the_rules_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit to the classification code changes the key (no version to remember to bump)."""
    source = Path(classify.__file__).read_bytes()
    assert classify._rules_digest() == hashlib.sha256(source).hexdigest()
    before = rules_key(Classifier())
    rules_key.cache_clear()
    monkeypatch.setattr(classify, "_rules_digest", lambda: hashlib.sha256(source + b"\n# edited").hexdigest())
    try:
        assert rules_key(Classifier()) != before
    finally:
        rules_key.cache_clear()


def test_the_default_patterns_compile_and_bad_patterns_are_still_refused() -> None:
    """A default classifier skips checking its patterns (every load makes one): they must compile."""
    import re

    for label, patterns in classify._DEFAULTS.items():
        assert getattr(Classifier(), label) == patterns
        for pattern in patterns:
            re.compile(pattern)
    with pytest.raises(ValueError, match="bad regular expression"):
        Classifier().extend(memory=["("])
    with pytest.raises(ValueError, match="bad regular expression"):
        Classifier(other=("(",))
