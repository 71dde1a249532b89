"""Write docs/ops.md's op x target table from the code: every op of TF's registry (parsers/tensorflow/
tf_ops.txt) that an inference graph can carry, and per target "exact" or "refused: reason".

How a cell is decided:
- no TF handler in the parser: refused with the parser's reason for it (parsers/tensorflow/refused_ops.py), else
  no converter;
- a handler, but no sample graph (tests/support/op_samples.py) measures it: refused, not verified;
- the parser refuses every sample of the op: refused with the parser's reason;
- else the target's own check (`emitters.<target>.unsupported`) on the IR of the op's samples: refused with
  the target's reason when it refuses a node the op made (Caffe: for its float32 samples), else exact.
"Exact" is what tests/parsers/test_op_breadth.py measures in each runtime against TF.

    python scripts/op_table.py           rewrite the marked section of docs/ops.md
    python scripts/op_table.py --check   exit 1 when docs/ops.md differs from the code
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from tf_convert.convert.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ops.md"
BEGIN, END = "<!-- op-table:begin (scripts/op_table.py writes this) -->", "<!-- op-table:end -->"
# the table's columns: each target, and Caffe once more in its OpenCV dialect -- column: (target, options)
COLUMNS = {**{t: (t, None) for t in TARGETS}, "caffe-opencv": ("caffe", {"caffe_dialect": "opencv"})}
HEADERS = {"torch": "PyTorch", "onnx": "ONNX", "mxnet": "MXNet", "caffe": "Caffe",
           "caffe-opencv": "Caffe (--caffe-dialect opencv)"}
CAFFE_DTYPE_WORDS = "Caffe blobs are float32"

# TF ops an inference graph does not carry as computation: (pattern on the op name, why)
NOT_INFERENCE = [
    (r"^_", "TF-internal"),
    (r"Grad(V\d)?$|Grad[A-Z]|BackpropFilter|^(Resource)?(Sparse)?Apply|^ResourceSparseApply|Backprop$", "training"),
    (r"Variable|^VarHandleOp$|^ReadVariableOp$|^VarIsInitialized|^DestroyResourceOp$|^Assign|^ResourceScatter|"
     r"^Scatter(Add|Sub|Mul|Div|Min|Max|Update)$|^ScatterNd(Add|Sub|Update|Max|Min)$|^ResourceStridedSliceAssign$",
     "variable state"),
    (r"Save|Restore|Reader|Record|Dataset|Iterator|Queue|Summary|Checkpoint|File|Snapshot|Barrier|Stack|TensorArray|"
     r"Table|Lookup|Mutex|Optional|Print|^Assert|Collective|Nccl|^Send|^Recv|_Send|_Recv|Tpu|TPU|Xla|Infeed|Outfeed|"
     r"Enqueue|Dequeue|Rpc|Remote|Debug|Session|Accumulator|Conditional|Profiler|Resource(Count|Using)|Iterat",
     "I/O, state or runtime"),
    (r"^(Enter|Exit|Switch|Merge|NextIteration|LoopCond|ControlTrigger|NoOp|RefSwitch|RefMerge|RefEnter|RefExit|"
     r"RefNextIteration|RefSelect|RefIdentity|Abort|If|StatelessIf|While|StatelessWhile|Case|StatelessCase|For|"
     r"PartitionedCall|StatefulPartitionedCall|SymbolicGradient|RemoteCall|Placeholder|PlaceholderV2|"
     r"PlaceholderWithDefault|Const|HostConst|FakeParam)$", "graph structure (the parser handles it as such)"),
]


def inference_ops() -> list[str]:
    from tf_convert.parsers.tensorflow.known_ops import TABLE_PATH

    names = [line.split()[0] for line in TABLE_PATH.read_text().splitlines() if line and not line.startswith("#")]
    return sorted(n for n in names if not any(re.search(p, n) for p, _ in NOT_INFERENCE))


def _verdicts() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """(op -> target -> "exact" or reason for the ops with samples, op -> parser reason for refused ones)."""
    from tests.support import op_breadth, op_samples
    from tf_convert import emitters

    with tempfile.TemporaryDirectory(prefix="op-table-") as tmp:
        pb, _, _ = op_samples.build_graph(Path(tmp))
        parsed = op_breadth.parse_samples(pb)
    graph = parsed.graph
    op_of_case = {s.case: s.op for s in op_samples.SAMPLES}
    parser_refused: dict[str, str] = {}
    for case, hint in parsed.refused.items():
        parser_refused.setdefault(op_of_case[case], hint)
    producers = {out: node for node in graph.nodes for out in node.outputs}
    verdicts: dict[str, dict[str, str]] = {}
    for column, (target, options) in COLUMNS.items():
        problems = {p.node: f"{p.hint}" for p in emitters.get(target).unsupported(graph, options)}
        # per op: one (kind, reason) per sample -- "ran" (the whole sample converts, so the test measured it),
        # "refused" (a node the op made is refused), "context" (only what feeds it is refused: not measured)
        per_op: dict[str, list[tuple[str, str]]] = {}
        for out in graph.outputs:
            op = op_of_case[op_breadth.case_of(graph, out)]
            own = [problems[n] for n in sorted(_made_by(graph, producers, out, op)) if n in problems]
            context = [problems[n] for n in sorted(_made_by(graph, producers, out, None)) if n in problems]
            kind = "refused" if own else "context" if context else "ran"
            per_op.setdefault(op, []).append((kind, (own or context or [""])[0]))
        for op, results in per_op.items():
            refused = [r for kind, r in results if kind == "refused"]
            ran = any(kind == "ran" for kind, _ in results)
            if target == "caffe" and ran:  # float32 samples exact: the dtype ones aside
                refused = [r for r in refused if CAFFE_DTYPE_WORDS not in r]
            if refused:
                verdicts.setdefault(op, {})[column] = refused[0]
            elif ran:
                verdicts.setdefault(op, {})[column] = "exact"
            else:  # every sample needs something the target refuses first: never claim exact unmeasured
                context = next(r for kind, r in results if kind == "context")
                verdicts.setdefault(op, {})[column] = f"not verified (every sample needs: {context})"
    return verdicts, parser_refused


def _made_by(graph, producers, out: str, op: str | None) -> set[str]:
    """The nodes behind `out` that TF op `op` made, not its context (the ops feeding it, the layout
    transposes in front of it: those are refused in their own right, with their own reason); every node
    behind `out` for op None."""
    made, stack, seen = set(), [out], set()
    while stack:
        node = producers.get(stack.pop())
        if node is None or node.name in seen:
            continue
        seen.add(node.name)
        if op is None or node.source_op == op or node.source_op.startswith(f"{op}("):
            made.add(node.name)
        stack.extend(node.inputs)
    return made


def cells() -> dict[str, dict[str, str]]:
    from tf_convert.parsers.tensorflow.refused_ops import refusal_reason
    from tf_convert.parsers.tensorflow.table import TABLE
    from tf_convert.parsers.tensorflow.training.deprecated import REWRITTEN

    verdicts, parser_refused = _verdicts()
    table = {}
    for op in inference_ops():
        if op not in TABLE and op not in REWRITTEN:  # a rewritten op converts as what it becomes
            # the parser's reason where it states one (strings, sets, tables), else none
            row = dict.fromkeys(COLUMNS, f"refused: {refusal_reason(op) or 'no converter for this TF op'}")
        elif op in parser_refused and op not in verdicts:
            row = dict.fromkeys(COLUMNS, f"refused: {_one_line(parser_refused[op].split(': ', 1)[-1])}")
        elif op not in verdicts:
            row = dict.fromkeys(COLUMNS, "refused: not verified (no sample graph measures it)")
        else:
            row = {t: v if v == "exact" else f"refused: {_one_line(v)}" for t, v in verdicts[op].items()}
        table[op] = row
    return table


def _one_line(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ").strip()


def render(table: dict[str, dict[str, str]]) -> str:
    from tf_convert.parsers.tensorflow.runtime_shapes import RUN_TIME_SIZES
    from tf_convert.parsers.tensorflow.runtime_values import RUN_TIME_PARAMETERS

    counts = {t: sum(row[t] == "exact" for row in table.values()) for t in COLUMNS}
    three = sum(all(row[t] == "exact" for t in ("torch", "onnx", "mxnet")) for row in table.values())
    lines = [
        BEGIN,
        f"{len(table)} TF ops an inference graph can carry (TF's op registry without training, I/O, state and graph-"
        f"structure ops). Exact: " + ", ".join(f"{HEADERS[t]} {counts[t]}" for t in COLUMNS)
        + f"; exact in PyTorch, ONNX and MXNet alike: {three}. Caffe takes float32 tensors only; its OpenCV "
        "dialect (files OpenCV DNN reads, BVLC Caffe does not: docs/caffe-dialect.md) adds OpenCV's own layers. "
        "Run-time parameters: those the converted model reads as tensors when the graph computes them (a "
        "placeholder, the data); every other parameter must be a constant at conversion. Where the output's sizes "
        "follow them, PyTorch and ONNX compute the sizes while the model runs, MXNet and Caffe refuse.",
        "",
        "| TF op | " + " | ".join(HEADERS[t] for t in COLUMNS) + " | Run-time parameters |",
        "|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    for op, row in table.items():
        params = "; ".join(filter(None, (RUN_TIME_PARAMETERS.get(op), RUN_TIME_SIZES.get(op))))
        lines.append(f"| {op} | " + " | ".join(row[t] for t in COLUMNS) + f" | {params} |")
    lines.append(END)
    return "\n".join(lines)


def replace_section(text: str, section: str) -> str:
    if BEGIN not in text:
        return text.rstrip("\n") + "\n\n## Op x target table\n\n" + section + "\n"
    head, rest = text.split(BEGIN, 1)
    return head + section + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    sys.path[:0] = [str(ROOT)]
    from scripts import readme_section

    text = PAGE.read_text()
    return readme_section.write_or_check(PAGE, text, replace_section(text, render(cells())), "--check" in argv,
                                         "op table", "python scripts/op_table.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
