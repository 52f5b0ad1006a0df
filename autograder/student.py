"""The student's side when the course runs from this repository: a working copy in notebooks/."""
from __future__ import annotations

import shutil

from .course import NOTEBOOKS, RELEASE, ROOT, STEP


def fetch(step: str = STEP) -> list[str]:
    """Copy the released notebooks into notebooks/<step>/; a notebook already there is the
    student's work and is never overwritten."""
    dest = NOTEBOOKS / step
    dest.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for path in sorted((RELEASE / step).glob("*.ipynb")):
        target = dest / path.name
        if target.exists():
            kept.append(path.name)
        else:
            shutil.copy2(path, target)
            copied.append(path.name)
    where = dest.relative_to(ROOT)
    if copied:
        print(f"fetch: copied {len(copied)} notebooks to {where}/: {', '.join(copied)}")
    if kept:
        print(f"fetch: kept your {len(kept)} notebooks already in {where}/ (never overwritten)")
    return copied
