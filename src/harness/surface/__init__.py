"""The Surface: its rules (``SurfaceManager``), the one fold every reader shares (``fold_surface``)
and the projection of nodes to messages (FORMAT §6).
"""

from __future__ import annotations

from harness.surface.fold import Replacement, SurfaceFold, fold_surface
from harness.surface.manager import SurfaceManager, SurfaceView

__all__ = [
    "Replacement",
    "SurfaceFold",
    "SurfaceManager",
    "SurfaceView",
    "fold_surface",
]
