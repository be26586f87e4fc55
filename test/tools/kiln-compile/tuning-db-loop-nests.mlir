// kiln-compile lists the loop nests that run on threads as tunable kernels:
// a depthwise convolution, elementwise ops and a reduction (the global
// average pool). A tuning database's record for one configures it.
// Depthwise convolutions and pools are the kind "window". (The blocked
// layout's, with their positions knob, are tested from ONNX in
// test/python/test_tune.py.)
// RUN: kiln-compile %s --emit=kernels --cpu=x86-64-v4 -o %t.json
// RUN: FileCheck %s --check-prefix=KERNELS < %t.json
// RUN: %python -c "import json, sys; d = json.load(open(sys.argv[1])); k = [k for k in d['kernels'] if k['kind'] == 'window'][0]; print(json.dumps({'kernel': k['signature'], 'target': d['target'], 'config': {'parallel': False}, 'ms': 0.01}))" %t.json > %t.db.jsonl
// RUN: kiln-compile %s --cpu=x86-64-v4 --tuning-db=%t.db.jsonl -o %t.so --report 2>&1 | FileCheck %s --check-prefix=REPORT
// Without threads, the loop nests have no knobs and are not listed.
// RUN: kiln-compile %s --emit=kernels --cpu=x86-64-v4 --no-openmp -o - | FileCheck %s --check-prefix=SERIAL

func.func @main(%x: tensor<1x16x28x28xf32> {kiln.name = "x"})
    -> (tensor<1x32x1x1xf32> {kiln.name = "y"}) {
  %p = arith.constant dense<0.25> : tensor<32x16x1x1xf32>
  %e = graph.conv %x, %p {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x28x28xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x28x28xf32>
  %w = arith.constant dense<0.125> : tensor<32x1x3x3xf32>
  %b = arith.constant dense<0.5> : tensor<32xf32>
  %c = graph.conv %e, %w, %b {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x28x28xf32>, tensor<32x1x3x3xf32>, tensor<32xf32>) -> tensor<1x32x28x28xf32>
  %r = graph.relu %c : tensor<1x32x28x28xf32>
  %y = graph.global_average_pool %r : (tensor<1x32x28x28xf32>) -> tensor<1x32x1x1xf32>
  return %y : tensor<1x32x1x1xf32>
}

// The depthwise convolution in NCHW (this small model stays unblocked) is a
// loop nest of its own, its ReLU another.
// KERNELS: "kind": "window"
// KERNELS: "signature": "linalg.depthwise_conv_2d_nchw_chw tensor<1x32x30x30xf32>, tensor<32x3x3xf32> -> tensor<1x32x28x28xf32>"
// KERNELS: "space": {
// KERNELS-NEXT: "parallel": [
// KERNELS-NEXT: false,
// KERNELS-NEXT: true
// KERNELS-NEXT: ],
// KERNELS-NEXT: "tiles": [
// KERNELS: "kind": "elementwise"
// KERNELS: "kind": "reduction"
// KERNELS: "signature": "linalg.generic tensor<1x32x28x28xf32> -> tensor<1x32xf32>
// KERNELS: "space": {
// KERNELS-NEXT: "parallel": [

// REPORT: tuning: 1 kernel(s) configured by {{.*}}db.jsonl for x86_64-unknown-linux-gnu/x86-64-v4
// REPORT-NEXT: linalg.depthwise_conv_2d_nchw_chw {{.*}}: {"parallel":false} ({{.*}}db.jsonl:1)

// SERIAL-NOT: "kind": "window"
// SERIAL-NOT: "kind": "reduction"
// SERIAL: "kind": "conv2d"
// SERIAL-NOT: "kind"
