"""Verification: TensorFlow's reference outputs (reference, reference_process, reference_store), the inputs
fed to both sides (compare.make_inputs, token_inputs, mask_inputs), the comparison of every output (compare)
and the one judgement of an error (metric)."""

from .compare import depth_of, failure_message, make_inputs, metrics, plan, unreadable_output, verify

__all__ = ["depth_of", "failure_message", "make_inputs", "metrics", "plan", "unreadable_output", "verify"]
