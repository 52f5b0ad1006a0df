"""Driving the student's JupyterLab in Chromium: the server, the page, and what the page shows.

A `Lab` is a JupyterLab server on loopback (a free port, no token) over a temporary copy of the
course, started with the course's environment and always stopped. The page helpers click what a
student clicks (the Run menu, a slider's readout, nbgrader's Validate button) and read what a
student reads (prompts, error outputs, dialogs) from the DOM.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from autograder.nbgrader_cmd import JUPYTERLAB_MAIN
from conftest import copy_course  # noqa: F401  (the tests import it from here too)

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"

# Chromium's flags that work in containers and CI (no sandbox as root, no GPU, no phoning home).
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}


def find_chromium() -> str | None:
    """The Chromium to drive: $CHROMIUM when set (CHROMIUM=none: no browser), else Debian's
    /usr/bin/chromium, else one on PATH."""
    if os.environ.get("CHROMIUM"):
        candidates = [os.environ["CHROMIUM"]]
    else:
        candidates = ["/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_environment(course: Path, state: Path, extra: dict | None = None) -> dict:
    """The environment of a student's JupyterLab on this course: the course on the kernels' path,
    inline pictures, and Jupyter's own state (settings, workspaces, runtime files) in `state`,
    so nothing of the person running the tests leaks in or is changed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(course), env.get("PYTHONPATH", "")] if p)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython"),
                     ("MPLCONFIGDIR", "matplotlib")):
        (state / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(state / sub)
    env.pop("JPY_PARENT_PID", None)
    env.update(extra or {})
    return env


class Lab:
    """A JupyterLab server for the tests, started with the options `make lab` (role "student") or
    `make formgrader` (role "instructor") uses. A context manager: it is always stopped."""

    def __init__(self, root_dir: Path, state: Path, cwd: Path | None = None, env: dict | None = None,
                 role: str = "student", start_timeout: float = 120):
        from autograder.classroom.lab import lab_arguments
        self.root_dir, self.state, self.role = Path(root_dir), Path(state), role
        self.cwd = Path(cwd or root_dir)
        self.env = lab_environment(self.cwd, self.state, env)
        self.start_timeout = start_timeout
        self.lab_arguments = lab_arguments
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_path = self.state / "jupyterlab.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Lab":
        for attempt in range(3):          # a free port can be taken between the check and the bind
            self.port = free_port()
            try:
                self._start()
                return self
            except OSError:
                self.stop()
                if attempt == 2:
                    raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _start(self) -> None:
        args = [sys.executable, "-c", JUPYTERLAB_MAIN, *self.lab_arguments(self.root_dir, self.role),
                "--no-browser", f"--port={self.port}", "--port-retries=0", "--ServerApp.ip=127.0.0.1",
                "--IdentityProvider.token=", "--ServerApp.password="]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--allow-root")
        log = open(self.log_path, "ab")
        logged_before = log.tell()
        self.proc = subprocess.Popen(args, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "Address already in use" in self.log()[logged_before:]:
                    raise OSError(f"port {self.port} was taken")
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer on {self.url}/api within {self.start_timeout:.0f} s:\n"
                           f"{self.log()[-3000:]}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (it shuts its kernels down first); kill it if it does not stop in time."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)          # the server shuts its kernels down, then itself
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


# ---- the page --------------------------------------------------------------------------------

IDLE = '.jp-Notebook-ExecutionIndicator[data-status="idle"]'


def screenshot(page, name: str, **kwargs) -> Path:
    """Save what the student sees as artifacts/screenshots/<name>.png (a person looks at these)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    page.screenshot(path=str(path), **kwargs)
    return path


def dialogs(page) -> list[str]:
    """The text of every open dialog."""
    return page.eval_on_selector_all(".jp-Dialog", "els => els.map(e => e.textContent)")


def open_notebook(page, lab: Lab, relpath: str, timeout_ms: int = 90_000) -> None:
    """Open a notebook and wait until its kernel is idle. A tab that shows this server's JupyterLab
    already keeps it, as a student does: the open notebook is closed (File > Close All Tabs, its
    changes discarded) and this one opened with File > Open from Path…; otherwise (or if that fails)
    the tab loads JupyterLab in a fresh workspace. Loading JupyterLab again cost Chromium about 4 s
    of CPU for every notebook."""
    if not (page.url.startswith(f"{lab.url}/lab") and _open_in_app(page, relpath, timeout_ms)):
        page.goto(f"{lab.url}/lab/tree/{relpath}?reset", timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.wait_for_function(
        """() => document.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
                && /\\|\\s*Idle/.test((document.querySelector('#jp-main-statusbar') || {}).textContent || '')""",
        timeout=timeout_ms, polling=200)
    found = [d for d in dialogs(page) if "Select Kernel" in d]
    assert not found, f"{relpath}: a 'Select Kernel' dialog blocks the notebook (is its kernelspec missing?)"


def _open_in_app(page, relpath: str, timeout_ms: int) -> bool:
    """In the JupyterLab the tab shows: close every tab (discarding changes), then File > Open from
    Path…; True once the notebook's panel is the only one. False if any step fails."""
    try:
        for _ in range(5):                                   # a dialog left open (Validate's verdict)
            if not dialogs(page):
                break
            page.keyboard.press("Escape")
            page.wait_for_timeout(200)
        if page.locator(".jp-NotebookPanel").count():
            menu(page, "File", "Close All Tabs")
            discard = page.locator(".jp-Dialog button", has_text="Discard")
            deadline = time.monotonic() + 30
            while page.locator(".jp-NotebookPanel").count():
                if discard.count():
                    discard.first.click()
                assert time.monotonic() < deadline
                page.wait_for_timeout(100)
        menu(page, "File", "Open from Path…")
        path = page.locator('.jp-Dialog input[placeholder="/path/relative/to/jlab/root"]')
        path.fill(relpath)
        path.press("Enter")
        page.wait_for_selector(".jp-NotebookPanel", timeout=timeout_ms)
        return page.locator(".jp-NotebookPanel").count() == 1 and not dialogs(page)
    except Exception:
        return False


def menu(page, top: str, item: str) -> None:
    """Click a menu bar entry, then one of its items (exact label)."""
    page.get_by_role("menuitem", name=top, exact=True).click()
    page.locator('ul[role="menu"] li[role="menuitem"]').filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(item)}$"))).first.click()


_STATE_JS = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
      .map(p => p.textContent);
  const counts = prompts.map(t => { const m = /\\[(\\d+)\\]/.exec(t); return m ? +m[1] : 0; });
  return {running: prompts.some(t => t.includes('*')), max: Math.max(0, ...counts),
          idle: !!document.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]')};
}"""


def execution_state(page) -> dict:
    return page.evaluate(_STATE_JS)


def wait_until_done(page, after: int, timeout_ms: int) -> None:
    """Wait until the kernel ran something past execution count `after` and nothing is queued."""
    page.wait_for_function(f"""() => {{ const s = ({_STATE_JS})();
                                        return s.max > {after} && !s.running && s.idle; }}""",
                           timeout=timeout_ms, polling=200)


_CELLS_JS = """els => els.map(cell => ({
  kind: cell.classList.contains('jp-CodeCell') ? 'code'
        : cell.classList.contains('jp-MarkdownCell') ? 'markdown' : 'raw',
  prompt: ((cell.querySelector('.jp-InputArea-prompt') || {}).textContent || '').trim(),
  source: (cell.querySelector('.jp-InputArea-editor .cm-content') || {}).textContent || '',
  outputs: [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => ({
      mime: o.getAttribute('data-mime-type') || '', text: o.textContent || '',
      images: o.querySelectorAll('img').length})),
  widgets: cell.querySelectorAll('.jupyter-widgets').length,
}))"""

TRACEBACK_HEAD = re.compile(r"^(\w[\w.]*)\s+Traceback \(most recent call last\)", re.M)
LAST_LINE_ERROR = re.compile(r"^(\w[\w.]*(?:Error|Exception|Interrupt|Exit))\b(?::|$)")


@dataclass
class Cell:
    index: int
    kind: str
    prompt: str
    source: str
    outputs: list = field(default_factory=list)
    widgets: int = 0

    @property
    def ran(self) -> bool:
        return bool(re.search(r"\[\d+\]", self.prompt))

    def errors(self) -> list[tuple[str, str]]:
        """(exception name, text) of every error output this cell shows."""
        found = []
        for out in self.outputs:
            if out["mime"] != "application/vnd.jupyter.stderr":
                continue
            text = out["text"]
            head = TRACEBACK_HEAD.search(text)
            lines = [line for line in text.strip().splitlines() if line.strip()]
            last = LAST_LINE_ERROR.match(lines[-1]) if lines else None
            if head or last:
                found.append(((head or last).group(1).split(".")[-1], text))
        return found

    def stderr(self) -> list[str]:
        """Text on stderr that is not an error (warnings, logs)."""
        error_texts = {t for _, t in self.errors()}
        return [o["text"] for o in self.outputs
                if o["mime"] == "application/vnd.jupyter.stderr" and o["text"] not in error_texts]


def cells(page) -> list[Cell]:
    raw = page.eval_on_selector_all(".jp-Notebook .jp-Notebook-cell", _CELLS_JS)
    return [Cell(i, **c) for i, c in enumerate(raw)]


def run_all(page, timeout_ms: int = 240_000) -> list[Cell]:
    """Run All Cells, as a student does; when a cell fails (Run All stops there), carry on from the
    next cell that has not run, as a student who reads the message and goes on. Returns the cells.
    Outputs saved in the notebook (a solution's) are cleared first, so every output read afterwards
    comes from this run."""
    if execution_state(page)["max"] > 0:
        menu(page, "Edit", "Clear Outputs of All Cells")
        page.wait_for_function(f"() => ({_STATE_JS})().max === 0", timeout=timeout_ms, polling=200)
    before = execution_state(page)["max"]
    menu(page, "Run", "Run All Cells")
    wait_until_done(page, before, timeout_ms)
    for _ in range(200):                                  # bounded: one round per failing cell
        shown = cells(page)
        # every code cell that has not run, wherever it is: after an error the kernel aborts the
        # requests queued in the next moment, so cells below may have run while the ones right
        # after the failing cell were skipped
        waiting = [c for c in shown if c.kind == "code" and not c.ran and c.source.strip()]
        if not waiting:
            return shown
        before = execution_state(page)["max"]
        select_cell(page, waiting[0].index)
        # JupyterLab disables "... and All Below" on the notebook's last cell: there a student runs the cell
        last = waiting[0].index == len(shown) - 1
        menu(page, "Run", "Run Selected Cell and Do not Advance" if last else "Run Selected Cell and All Below")
        wait_until_done(page, before, timeout_ms)
    raise AssertionError("Run All never reached the end of the notebook")


def select_cell(page, index: int) -> None:
    """Make cell `index` the active cell, as a student does by clicking next to it. Cells above
    may still grow while they render, so the click is checked and repeated if it missed."""
    target = page.locator(".jp-Notebook .jp-Notebook-cell").nth(index)
    for _ in range(10):
        target.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        target.locator(".jp-InputPrompt").first.click()
        if "jp-mod-active" in (target.get_attribute("class") or "").split():
            return
    raise AssertionError(f"could not select cell {index}")


def scroll_to(page, index: int) -> None:
    page.locator(".jp-Notebook .jp-Notebook-cell").nth(index).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
