"""A person on the course's JupyterHub in Chromium: logging in, nbgrader's Assignments tab."""
from __future__ import annotations

import re
import time

from .lab import screenshot


def log_in(page, hub: dict, account: str, timeout_ms: int = 180_000) -> float:
    """Log in on the hub's login page with the account's development password; wait for JupyterLab.
    Returns the seconds from the login page to a usable JupyterLab."""
    started = time.monotonic()
    page.goto(f"{hub['url']}/hub/login")
    page.fill("#username_input", account)
    page.fill("#password_input", f"dev-{account}")
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{re.escape(account)}/lab"), timeout=timeout_ms)
    # JupyterLab usable: its menu bar with nbgrader's menu (a later login restores the last layout,
    # which may hold no Launcher)
    page.get_by_role("menuitem", name="Nbgrader", exact=True).wait_for(timeout=timeout_ms)
    return time.monotonic() - started


def open_assignments(page) -> None:
    """Nbgrader > Assignment List: the Assignments tab."""
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.locator('ul[role="menu"] li[role="menuitem"]').filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Assignment List$"))).first.click()


def shot(page, name: str) -> None:
    screenshot(page, f"hub-{name}")
