#!/usr/bin/env node
// Times one ONNX model in ONNX Runtime (onnxruntime-node) and prints one JSON line.
//
//   node ort_bench.js --model M.onnx --shape 1,3,224,224 --threads N [--runs R] [--warmup W]
//                     [--input X.f32] [--output Y.f32] [--spin 0|1] [--optimized OUT.onnx]
//
// --input / --output are raw little-endian float32 files (the caller knows the shapes); without
// --input the images are a fixed pseudo-random pattern, which is all timing needs.
// Session settings follow /work/shared/PEERS.md: intraOpNumThreads = N, interOpNumThreads = 1,
// graphOptimizationLevel 'all'. --spin 0 turns off the intra-op threads' busy-waiting (ORT's
// session.intra_op.allow_spinning; default on), the counterpart of OMP_WAIT_POLICY=passive for
// the OpenMP engines when the cores are oversubscribed. The JSON carries every run's time so the caller can pool them,
// and the process's peak RSS (what a user of ORT would pay, Node runtime included).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
  const args = { runs: 10, warmup: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (i + 1 >= argv.length) throw new Error(`missing value for ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  for (const required of ['model', 'shape', 'threads']) {
    if (args[required] === undefined) throw new Error(`--${required} is required`);
  }
  args.shape = args.shape.split(',').map(Number);
  args.threads = Number(args.threads);
  args.runs = Number(args.runs);
  args.warmup = Number(args.warmup);
  return args;
}

function readImages(file, count) {
  if (file) {
    const bytes = fs.readFileSync(file);
    if (bytes.length !== count * 4) throw new Error(`${file}: ${bytes.length} bytes, expected ${count * 4}`);
    // Copy into an aligned buffer: a Buffer from readFileSync may start at any byte offset.
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }
  const data = new Float32Array(count);
  let state = 12345;
  for (let i = 0; i < count; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    data[i] = (state / 4294967296) * 4 - 2;  // roughly the range of normalised pixels
  }
  return data;
}

function percentile(sorted, q) {
  // Linear interpolation between ranks: the rule `pola bench` and compare.py use.
  const idx = q * (sorted.length - 1);
  const lo = Math.floor(idx);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - lo);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const count = args.shape.reduce((a, b) => a * b, 1);
  const images = new ort.Tensor('float32', readImages(args.input, count), args.shape);

  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  };
  // --optimized PATH: ORT writes the graph it runs after its optimizations (how many QDQ groups it fused
  // into int8 kernels: count_ort_ops.py).
  if (args.optimized !== undefined) options.optimizedModelFilePath = args.optimized;
  if (args.spin !== undefined) options.extra = { session: { intra_op: { allow_spinning: String(args.spin) } } };
  const createStart = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, options);
  const createMs = Number(process.hrtime.bigint() - createStart) / 1e6;
  const feeds = { [session.inputNames[0]]: images };

  let logits = null;
  for (let i = 0; i < args.warmup; i++) logits = (await session.run(feeds))[session.outputNames[0]];
  const times = [];
  for (let i = 0; i < args.runs; i++) {
    const start = process.hrtime.bigint();
    const out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    logits = out[session.outputNames[0]];
  }
  if (args.output) fs.writeFileSync(args.output, Buffer.from(logits.data.buffer, logits.data.byteOffset, logits.data.byteLength));

  const sorted = [...times].sort((a, b) => a - b);
  console.log(JSON.stringify({
    engine: 'onnxruntime-node',
    version: ort.env.versions ? ort.env.versions.node : 'unknown',
    threads: args.threads,
    batch: args.shape[0],
    session_create_ms: createMs,
    times_ms: times,
    median_ms: percentile(sorted, 0.5),
    p90_ms: percentile(sorted, 0.9),
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,  // maxRSS is in KiB
  }));
}

main().catch((err) => {
  console.error(`ort_bench.js: ${err.message}`);
  process.exit(1);
});
