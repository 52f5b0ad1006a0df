"""The corpus: present and verified, refused with a clear message when missing or wrong."""
import shutil
import subprocess

import pytest

from dlcourse import data
from dlcourse.data import CorpusError, SHA256, Vocab, fetch, load_text, sha256_of, verify

from conftest import ROOT


def test_corpus_is_the_course_text():
    text = load_text()
    assert len(text) == 1_115_394
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.")
    vocab = Vocab(text)
    assert vocab.size == 65
    assert vocab.decode(vocab.encode(text[:2000])) == text[:2000]
    assert vocab.chars == sorted(set(text))


def test_missing_corpus_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(CorpusError, match=r"(?s)missing.*make data"):
        verify(tmp_path / "tinyshakespeare.txt")


def test_truncated_corpus_is_refused_by_its_sha256(tmp_path):
    bad = tmp_path / "tinyshakespeare.txt"
    bad.write_bytes((ROOT / "data" / "tinyshakespeare.txt").read_bytes()[:-10])
    with pytest.raises(CorpusError, match=r"(?s)not the course's corpus: its sha256 is .*make data"):
        verify(bad)
    with pytest.raises(CorpusError):
        load_text(bad)


def test_environment_variable_points_at_the_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("DLCOURSE_CORPUS", str(tmp_path / "nowhere.txt"))
    with pytest.raises(CorpusError, match="nowhere.txt"):
        load_text()


def test_fetch_copies_from_shared_and_verifies(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(ROOT / "data" / "tinyshakespeare.txt", shared / "tinyshakespeare.txt")
    dest = tmp_path / "data" / "tinyshakespeare.txt"
    assert fetch(dest, shared=shared) == dest
    assert sha256_of(dest) == SHA256
    before = dest.stat().st_mtime_ns
    fetch(dest, shared=shared)                      # a verified copy is kept as it is
    assert dest.stat().st_mtime_ns == before


def test_fetch_replaces_a_bad_copy_and_never_keeps_a_bad_source(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    dest = tmp_path / "data" / "tinyshakespeare.txt"
    dest.parent.mkdir()
    dest.write_text("not shakespeare")
    (shared / "tinyshakespeare.txt").write_text("also not shakespeare")
    with pytest.raises(CorpusError, match="refusing to use it"):
        fetch(dest, shared=shared)
    assert dest.read_text() == "not shakespeare", "a failed fetch must not leave a new bad file"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".corpus-")], "temporary file left behind"
    shutil.copy(ROOT / "data" / "tinyshakespeare.txt", shared / "tinyshakespeare.txt")
    fetch(dest, shared=shared)
    assert sha256_of(dest) == SHA256


def test_fetch_without_shared_folder_and_network_says_what_to_do(tmp_path):
    dest = tmp_path / "tinyshakespeare.txt"
    with pytest.raises(CorpusError, match=r"(?s)Could not download .*by hand"):
        fetch(dest, shared=tmp_path / "no-shared", url="http://127.0.0.1:9/input.txt")
    assert not dest.exists()


def test_the_corpus_is_never_committed():
    git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)  # noqa: E731
    tracked = git("ls-files", "data")
    assert tracked.returncode == 0, tracked.stderr
    assert not [f for f in tracked.stdout.split() if f.endswith(".txt")], tracked.stdout
    assert git("check-ignore", "-q", "data/tinyshakespeare.txt").returncode == 0, "git would commit the corpus"


def test_fetch_without_a_shared_copy_downloads_from_the_course_url(tmp_path, monkeypatch):
    asked = []

    def refuse(url, timeout=None):
        asked.append(url)
        raise OSError("no network in this test")
    monkeypatch.setattr(data.urllib.request, "urlopen", refuse)
    with pytest.raises(CorpusError, match="Could not download"):
        fetch(tmp_path / "tinyshakespeare.txt", shared=tmp_path / "no-shared")
    assert asked == [data.URL] and asked[0].endswith("/data/tinyshakespeare/input.txt"), asked
