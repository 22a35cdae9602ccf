#!/usr/bin/python3
"""Op types of an ONNX graph, e.g. the one ort_bench.js --optimized wrote: how many int8 kernels ORT
fused from the QDQ groups (QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul, ...) and how
many QuantizeLinear / DequantizeLinear it left. Prints one JSON line.

  /usr/bin/python3 count_ort_ops.py OPT.onnx
"""
import collections
import json
import sys

import onnx

model = onnx.load(sys.argv[1], load_external_data=False)
ops = collections.Counter(f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in model.graph.node)
int8 = {k: v for k, v in ops.items() if any(t in k for t in ("QLinear", "Integer", "QGemm", "QAttention"))}
print(json.dumps({"model": sys.argv[1], "int8_kernels": int8, "int8_kernel_count": sum(int8.values()),
                  "QuantizeLinear": ops.get("QuantizeLinear", 0), "DequantizeLinear": ops.get("DequantizeLinear", 0),
                  "MatMul_float": ops.get("MatMul", 0), "ops": dict(ops)}))
