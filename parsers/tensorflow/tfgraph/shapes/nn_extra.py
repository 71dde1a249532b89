"""Shape functions of issue 22 part A's nn extras (TF's own shape rules)."""

from __future__ import annotations
