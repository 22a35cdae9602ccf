#!/usr/bin/python3
"""Writes the QDQ ONNX model ONNX Runtime runs as the int8 peer (ort_int8), from the SAME scales as the
engine's int8 file.

  /usr/bin/python3 qdq_export.py --onnx b1.onnx --float model.pola --int8 model.int8.pola --out b1.int8.onnx

Input: the float ONNX export of model.pola (peer_models.export_onnx) and the file `pola quantize` made
from model.pola. Every Linear layer the int8 file stores as I8 (`<prefix>.weight`, with
`<prefix>.weight_scale` per output channel and `<prefix>.input_scale` per tensor, weights/FORMAT.md
"I8 tensors") is found in the ONNX graph by its float weight (the initializer of a MatMul, transposed,
or of a Gemm with transB=1, bit-identical to the float file's weight) and rewritten as
  X -> QuantizeLinear(input_scale, 0 int8) -> DequantizeLinear -> MatMul/Gemm <- DequantizeLinear(q, weight_scale, axis)
with q the file's int8 weights: symmetric int8 activations and weights, as the engine runs them.
ONNX Runtime's QDQ transformers then fuse these into its int8 kernels (count them with ort_fused.js).
Prints one JSON line: how many layers were rewritten and which I8 layers were not found.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import safetensors_io  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--float", required=True, help="the float model file the ONNX export was made from")
    ap.add_argument("--int8", required=True, help="the `pola quantize` output of that file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--activations", choices=("int8", "uint8"), default="int8",
                    help="uint8: zero point 128, the same scale and the same grid as int8 with zero point 0 "
                         "(values -128..127), the form ORT's x86 kernels prefer")
    ap.add_argument("--per-tensor-weights", action="store_true",
                    help="diagnostic only: one weight scale per layer (the max of the file's), weights requantized; "
                         "NOT the engine's scales")
    args = ap.parse_args()

    ftensors, _ = safetensors_io.load_file(args.float)
    qtensors, _ = safetensors_io.load_file(args.int8)
    layers = {}  # float weight bytes (as laid out in ONNX) -> (prefix, transposed?)
    for name, q in qtensors.items():
        if q.dtype != np.int8 or not name.endswith(".weight"):
            continue
        prefix = name[:-len(".weight")]
        w = np.asarray(ftensors[name], dtype=np.float32)
        layers[np.ascontiguousarray(w.T).tobytes()] = (prefix, True)    # MatMul(X, W^T)
        layers[np.ascontiguousarray(w).tobytes()] = (prefix, False)     # Gemm(X, W, transB=1)

    model = onnx.load(args.onnx)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    new_inits, new_nodes, done = [], [], set()
    for node in graph.node:
        if node.op_type in ("MatMul", "Gemm") and len(node.input) >= 2 and node.input[1] in inits:
            if node.op_type == "Gemm":
                attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                if attrs.get("transA", 0) or not attrs.get("transB", 0):
                    new_nodes.append(node)
                    continue
            b = numpy_helper.to_array(inits[node.input[1]])
            hit = layers.get(np.ascontiguousarray(b.astype(np.float32)).tobytes()) if b.dtype == np.float32 else None
            if hit is not None and hit[1] == (node.op_type == "MatMul"):
                prefix = hit[0]
                q = qtensors[prefix + ".weight"]
                wscale = np.asarray(qtensors[prefix + ".weight_scale"], dtype=np.float32)
                xscale = np.asarray(qtensors[prefix + ".input_scale"], dtype=np.float32).reshape(())
                if args.per_tensor_weights:
                    w = q.astype(np.float32) * wscale[:, None]
                    wscale = np.full(wscale.shape, wscale.max(), np.float32)
                    q = np.clip(np.rint(w / wscale[:, None]), -127, 127).astype(np.int8)
                    wscale, wz = np.asarray(wscale.max(), np.float32), np.zeros((), np.int8)
                else:
                    wz = np.zeros(wscale.shape, np.int8)
                if args.activations == "uint8":
                    xz = np.full((), 128, np.uint8)
                else:
                    xz = np.zeros((), np.int8)
                tag = f"{prefix}.{len(done)}"
                wq = q.T if node.op_type == "MatMul" else q
                new_inits += [numpy_helper.from_array(np.ascontiguousarray(wq), tag + ".wq"),
                              numpy_helper.from_array(wscale, tag + ".ws"),
                              numpy_helper.from_array(wz, tag + ".wz"),
                              numpy_helper.from_array(xscale, tag + ".xs"),
                              numpy_helper.from_array(xz, tag + ".xz")]
                new_nodes += [
                    helper.make_node("QuantizeLinear", [node.input[0], tag + ".xs", tag + ".xz"], [tag + ".xq"]),
                    helper.make_node("DequantizeLinear", [tag + ".xq", tag + ".xs", tag + ".xz"], [tag + ".xd"]),
                    helper.make_node("DequantizeLinear", [tag + ".wq", tag + ".ws", tag + ".wz"], [tag + ".wd"],
                                     axis=1 if node.op_type == "MatMul" else 0)]
                inputs = [tag + ".xd", tag + ".wd"] + list(node.input[2:])
                node = helper.make_node(node.op_type, inputs, list(node.output), name=node.name,
                                        **{a.name: helper.get_attribute_value(a) for a in node.attribute})
                done.add(prefix)
        new_nodes.append(node)
    # The bias Add after each QDQ MatMul gets its 1-D bias reshaped to the rank of the MatMul's output,
    # (1, ..., 1, N): the same values and the same sum, but ORT's MatMulAddFusion (level 1) then leaves the
    # MatMul alone, which otherwise turns MatMul + Add into a float Gemm between Reshapes before the QDQ
    # transformers run, so that no int8 kernel is left (measured: 0 fused of 40 on pola_pvt_tiny). With it
    # ORT makes MatMulIntegerToFloat + Add.
    ranks = {}
    inferred = onnx.shape_inference.infer_shapes(onnx.load(args.onnx, load_external_data=False))
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        if vi.type.tensor_type.HasField("shape"):
            ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
    qmm = {n.output[0] for n in new_nodes if n.op_type == "MatMul" and n.input[1].endswith(".wd")}
    reshaped = 0
    for n in new_nodes:
        if n.op_type != "Add":
            continue
        for m, c in ((0, 1), (1, 0)):  # torch writes Add(bias, MatMul) or Add(MatMul, bias)
            if n.input[m] in qmm and n.input[c] in inits:
                bias = numpy_helper.to_array(inits[n.input[c]])
                if bias.ndim == 1:
                    # the rank shape inference gives, else 3: these models' Linear inputs are (B, N, C) or
                    # (B, H, W, C), and the head (2-D) is a Gemm, not one of these MatMuls
                    rank = ranks.get(n.input[m]) if ranks.get(n.input[m], 0) > 2 else 3
                    name = n.input[c] + f".rank{rank}"
                    new_inits.append(numpy_helper.from_array(bias.reshape((1,) * (rank - 1) + bias.shape),
                                                             name))
                    n.input[c] = name
                    reshaped += 1
    del graph.node[:]
    graph.node.extend(new_nodes)
    graph.initializer.extend(new_inits)
    used = {i for n in graph.node for i in n.input}
    keep = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    all_i8 = sorted(k[:-len(".weight")] for k, v in qtensors.items() if v.dtype == np.int8)
    print(json.dumps({"out": args.out, "qdq_layers": len(done), "int8_layers_in_file": len(all_i8), "bias_adds_reshaped": reshaped,
                      "not_found": [p for p in all_i8 if p not in done]}))


if __name__ == "__main__":
    main()
