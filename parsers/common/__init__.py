"""What every parser shares: NHWC <-> IR layout bookkeeping and reshapes in the source's element order
(layout.py), the order of a graph's nodes (order.py)."""
