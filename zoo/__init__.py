"""The model zoo: keras.applications architectures built with random weights (no downloads)."""
