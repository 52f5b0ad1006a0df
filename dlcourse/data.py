"""The corpus: tiny Shakespeare, 1,115,394 characters, 65 distinct ones.

The text is never committed. `fetch()` puts a verified copy at `data/tinyshakespeare.txt`
(copied from `../shared/data` when that folder exists beside the checkout, else downloaded
from its canonical public location); `load_text()` checks the sha256 every time it reads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

FILENAME = "tinyshakespeare.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
REPO_ROOT = Path(__file__).resolve().parent.parent
ENV_VAR = "DLCOURSE_CORPUS"


class CorpusError(RuntimeError):
    """The corpus is missing or is not the file the course was written for."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_path() -> Path:
    """Where the corpus lives: $DLCOURSE_CORPUS if set, else the first `data/tinyshakespeare.txt`
    found in the current folder or its parents (a student's notebooks/ folder, say), else this
    checkout's data/ folder."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        candidate = folder / "data" / FILENAME
        if candidate.is_file():
            return candidate
    return REPO_ROOT / "data" / FILENAME


def verify(path: Path) -> Path:
    """Return `path` if it holds the course's corpus; raise CorpusError saying what to do otherwise."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(
            f"The corpus is missing: no file at {path}.\n"
            f"Run `make data` in the course folder (it copies or downloads {FILENAME} and checks it)."
        )
    found = sha256_of(path)
    if found != SHA256:
        raise CorpusError(
            f"{path} is not the course's corpus: its sha256 is {found[:12]}…, expected {SHA256[:12]}….\n"
            f"It may be truncated or a different text. Delete it and run `make data` to fetch a verified copy."
        )
    return path


def fetch(dest: Path | None = None, shared: Path | None = None, url: str = URL) -> Path:
    """Put a verified corpus at `dest` and return its path.

    A valid copy already there is kept. Otherwise the text comes from `shared`
    (default: ../shared/data beside the checkout) when it holds the file, else from `url`.
    The new copy is verified before it replaces anything; a bad existing copy is replaced.
    """
    dest = Path(dest) if dest else REPO_ROOT / "data" / FILENAME
    if dest.is_file() and sha256_of(dest) == SHA256:
        print(f"corpus: {dest} is present and verified (sha256 {SHA256[:12]}…)")
        return dest
    shared = Path(shared) if shared else REPO_ROOT.parent / "shared" / "data"
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".corpus-", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if (shared / FILENAME).is_file():
            source = str(shared / FILENAME)
            shutil.copyfile(shared / FILENAME, tmp)
        else:
            source = url
            try:
                with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
                    shutil.copyfileobj(response, out)
            except OSError as err:
                raise CorpusError(
                    f"Could not download the corpus from {url}: {err}.\n"
                    f"Place {FILENAME} (sha256 {SHA256}) in {dest.parent} by hand, then run `make data` again."
                ) from err
        found = sha256_of(tmp)
        if found != SHA256:
            raise CorpusError(f"The corpus from {source} has sha256 {found}, expected {SHA256}: refusing to use it.")
        os.chmod(tmp, 0o644)  # mkstemp made it private; grading kernels run as another user
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"corpus: copied {source} -> {dest} (sha256 verified)")
    return dest


_cache: dict[Path, str] = {}


def load_text(path: Path | None = None) -> str:
    """The whole corpus as one string, after checking its sha256."""
    path = Path(path) if path else default_path()
    key = path.resolve()
    if key not in _cache:
        _cache[key] = verify(path).read_text(encoding="utf-8")
    return _cache[key]


class Vocab:
    """The character vocabulary of Step 3: every distinct character, sorted; ids are positions."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> list[int]:
        return [self.stoi[ch] for ch in s]

    def decode(self, ids) -> str:
        return "".join(self.itos[int(i)] for i in ids)


if __name__ == "__main__":  # python -m dlcourse.data [DEST]
    try:
        fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    except CorpusError as err:
        sys.exit(f"error: {err}")
