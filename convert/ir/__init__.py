"""The neutral intermediate representation every parser produces and every emitter consumes.

Conventions (the contract between parsers/ and emitters/):

* Nodes are kept in topological order. Every tensor has a static shape and a dtype.
* Rank-4 activations are NCHW, whatever the source layout; conv weights are OIHW
  (``(out, in / groups, kh, kw)``); transposed-conv weights are IOHW (PyTorch's
  ``ConvTranspose2d`` layout: ``(in, out / groups, kh, kw)``); dense weights are ``(out, in)``.
* Spatial pads are explicit integers ``pads = (top, bottom, left, right)``; see ``convert.padding``.
* Constants that feed binary ops are ``const`` nodes whose value is already laid out for NCHW
  broadcasting (numpy rules against the other operand).

Modules:
  ops        the op catalog (``OPS``), the one place an op is stated: attributes (typed, with
             defaults), parameters, meaning, kind, family, flags, shape rule, per-target refusals;
             the op sets other modules read (FOLDABLE, WINDOW_OPS, PADDED_OPS, ``ops_where``)
  shapes     each op's shape rule; ``check.problems(graph)`` compares every node with its row
  graph      ``Tensor``, ``Node``, ``Graph`` (queries, building, pruning, validation)
  index      ``GraphIndex``: the one producer / reader index of a graph
  serialize  ``save`` / ``load`` (graph.json + weights.npz)
  reference  the numpy reference evaluator, one function per op (``evaluate``, ``evaluate_node``)

Emitters register one handler per op name; ``Graph.validate`` rejects anything outside the catalog.
"""

from . import runtime_dims
from .graph import Graph, Node, Tensor
from .index import GraphIndex
from .ops import OPS, OpSpec, ops_of_kind
from .reference import evaluate, evaluate_node
from .serialize import IR_VERSION, load, save

__all__ = [
    "IR_VERSION", "OPS", "Graph", "GraphIndex", "Node", "OpSpec", "Tensor",
    "evaluate", "evaluate_node", "load", "ops_of_kind", "runtime_dims", "save",
]
