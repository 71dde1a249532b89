"""Issue 22 part A, nn extras."""

from __future__ import annotations
