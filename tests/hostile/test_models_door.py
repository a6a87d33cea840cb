"""Hostile input, round 4 (issue 39) F8: models. An empty model name, a folder whose config names its own code
without trust_remote_code, and a tokenizer larger than the model's embeddings are one error naming the model."""

from __future__ import annotations

import json

import pytest

from invarirank.errors import InvariRankError
from invarirank.runner._config import RunConfig


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_model_name_is_refused(name):
    from invarirank.llm.models import _resolve_source

    with pytest.raises(InvariRankError, match="model name .* is empty"):
        _resolve_source(name, allow_download=False)


def test_an_empty_model_setting_is_refused_by_the_run_schema():
    with pytest.raises(InvariRankError, match="setting 'model' must be a non-empty string"):
        RunConfig.from_mapping({"model": ""})


def test_a_folder_with_its_own_code_needs_trust_remote_code(tmp_path):
    from invarirank.llm.models import _resolve_source

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "auto_map": {"AutoModel": "m.Model"}}))
    with pytest.raises(InvariRankError, match="auto_map.*--trust-remote-code"):
        _resolve_source(str(tmp_path), allow_download=False)
    assert _resolve_source(str(tmp_path), allow_download=False, trust_remote_code=True)[0] == tmp_path.resolve()


def test_a_tokenizer_larger_than_the_embeddings_is_refused():
    pytest.importorskip("transformers")
    from invarirank.llm._testing import tiny_model, train_tokenizer

    tokenizer = train_tokenizer(vocab_size=400)
    with pytest.raises(InvariRankError, match=r"its tokenizer has \d+ tokens, more than the 100 rows"):
        tiny_model("llama", tokenizer, vocab_size=100)
