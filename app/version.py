"""The tool's version, a leaf every part of the application reads."""

__version__ = "0.1.0"
