// RUN: kiln-opt %s -split-input-file -kiln-codegen-duplicate-destinations | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-codegen-duplicate-destinations -one-shot-bufferize="bufferize-function-boundaries" -cse -canonicalize | FileCheck %s --check-prefix=BUF

// Two accumulations into one zero-filled tensor (CSE merged their fills):
// the second gets a fill of its own, made just before it, and bufferization
// copies nothing.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[E1:.+]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[Z1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E1]] : tensor<16xf32>)
// CHECK: %[[A:.+]] = linalg.generic {{.*}} outs(%[[Z1]] : tensor<16xf32>)
// CHECK: %[[E2:.+]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[Z2:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E2]] : tensor<16xf32>)
// CHECK: %[[B:.+]] = linalg.generic {{.*}} outs(%[[Z2]] : tensor<16xf32>)
// CHECK: return %[[A]], %[[B]]
// BUF-LABEL: func.func @shared_fill
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @shared_fill(%x: tensor<16x4xf32>, %y: tensor<16x4xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x4xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<16x4xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

// A fill on threads (an scf.forall of fills), reshaped, shared by two
// writers: the forall, its empty tensor and the reshape are made again.
// CHECK-LABEL: func.func @shared_parallel_fill
// CHECK: scf.forall
// CHECK: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK: tensor.empty() : tensor<4x1x16xf32>
// CHECK: scf.forall
// CHECK: tensor.collapse_shape
// CHECK: linalg.generic
// BUF-LABEL: func.func @shared_parallel_fill
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared_parallel_fill(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1x16xf32>
  %z = scf.forall (%i) in (4) shared_outs(%o = %e) -> (tensor<4x1x16xf32>) {
    %s = tensor.extract_slice %o[%i, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<4x1x16xf32> to tensor<1x1x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%s : tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%i, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<1x1x16xf32> into tensor<4x1x16xf32>
    }
  }
  %c = tensor.collapse_shape %z [[0, 1], [2]] : tensor<4x1x16xf32> into tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.mulf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %a, %b : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Not a fill: a tensor written with values is never made again.
// CHECK-LABEL: func.func @computed_not_duplicated
// CHECK-COUNT-1: linalg.generic {{.*}} ins(%arg0
// CHECK-NOT: tensor.empty
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @computed_not_duplicated(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  } -> tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%v : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%v : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.mulf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

// A padded tensor CSE made one for two layers (its fill on threads): the
// first layer's input is inserted into it; the second layer's producer
// writes into its interior slice, and that result is inserted back into the
// same slice. The second layer gets a fill of its own, shared by its slice
// and its insertion, so that its write stays in place.
// CHECK-LABEL: func.func @padded_twice
// CHECK: %[[F1:.+]] = linalg.fill
// CHECK: tensor.insert_slice %arg0 into %[[F1]]
// CHECK: %[[F2:.+]] = linalg.fill
// CHECK: %[[S:.+]] = tensor.extract_slice %[[F2]][1] [8] [1]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} outs(%[[S]] : tensor<8xf32>)
// CHECK: tensor.insert_slice %[[R]] into %[[F2]][1] [8] [1]
// BUF-LABEL: func.func @padded_twice
// BUF-COUNT-1: memref.copy
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0) -> (d0)>
func.func @padded_twice(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<10xf32>, tensor<10xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %a = tensor.insert_slice %x into %f[1] [8] [1] : tensor<8xf32> into tensor<10xf32>
  %s = tensor.extract_slice %f[1] [8] [1] : tensor<10xf32> to tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%y : tensor<8xf32>) outs(%s : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %b = tensor.insert_slice %r into %f[1] [8] [1] : tensor<8xf32> into tensor<10xf32>
  return %a, %b : tensor<10xf32>, tensor<10xf32>
}

// -----

// Two writers into disjoint slices of one empty tensor, inserted back: the
// parts of one tensor, left sharing it.
// CHECK-LABEL: func.func @disjoint_parts
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @disjoint_parts(%x: tensor<8xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %s0 = tensor.extract_slice %e[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
  %s1 = tensor.extract_slice %e[8] [8] [1] : tensor<16xf32> to tensor<8xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%s0, %s1 : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%i: f32, %o0: f32, %o1: f32):
    %n = arith.negf %i : f32
    linalg.yield %i, %n : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  %a = tensor.insert_slice %r#0 into %e[0] [8] [1] : tensor<8xf32> into tensor<16xf32>
  %b = tensor.insert_slice %r#1 into %a[8] [8] [1] : tensor<8xf32> into tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// A Relu (on threads) written into a padded tensor's interior and inserted
// back, then read again after the insertion (canonicalization folded a
// depthwise convolution's centre window to it): that read takes the
// interior of the inserted tensor, and bufferization copies nothing out of
// it (two copies without the pass).
// CHECK-LABEL: func.func @read_where_inserted
// CHECK: %[[R:.+]] = scf.forall
// CHECK: %[[P:.+]] = tensor.insert_slice %[[R]] into %{{.+}}[1] [8] [1]
// CHECK: %[[V:.+]] = tensor.extract_slice %[[P]][1] [8] [1]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[V]]
// BUF-LABEL: func.func @read_where_inserted
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0) -> (d0)>
func.func @read_where_inserted(%x: tensor<8xf32>) -> (tensor<10xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %s = tensor.extract_slice %f[1] [8] [1] : tensor<10xf32> to tensor<8xf32>
  %r = scf.forall (%i) = (0) to (8) step (4) shared_outs(%o = %s) -> (tensor<8xf32>) {
    %xs = tensor.extract_slice %x[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %os = tensor.extract_slice %o[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%xs : tensor<4xf32>) outs(%os : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[%i] [4] [1] : tensor<4xf32> into tensor<8xf32>
    }
  }
  %p = tensor.insert_slice %r into %f[1] [8] [1] : tensor<8xf32> into tensor<10xf32>
  %w = tensor.extract_slice %p[0] [8] [1] : tensor<10xf32> to tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %y = scf.forall (%i) = (0) to (8) step (4) shared_outs(%o = %e2) -> (tensor<8xf32>) {
    %rs = tensor.extract_slice %r[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %ws = tensor.extract_slice %w[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %os = tensor.extract_slice %o[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%rs, %ws : tensor<4xf32>, tensor<4xf32>) outs(%os : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    } -> tensor<4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[%i] [4] [1] : tensor<4xf32> into tensor<8xf32>
    }
  }
  return %p, %y : tensor<10xf32>, tensor<8xf32>
}

// -----

// The same with the interior written in two parts (a convolution split at
// its last channel block, each part inserted into the interior slice): the
// later read takes the interior of the padded tensor too.
// CHECK-LABEL: func.func @read_where_inserted_in_parts
// CHECK: %[[P:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[1] [8] [1]
// CHECK: %[[V:.+]] = tensor.extract_slice %[[P]][1] [8] [1]
// CHECK: linalg.generic {{.*}} ins(%[[V]] : tensor<8xf32>)
// BUF-LABEL: func.func @read_where_inserted_in_parts
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0) -> (d0)>
func.func @read_where_inserted_in_parts(%x: tensor<8xf32>) -> (tensor<10xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %s = tensor.extract_slice %f[1] [8] [1] : tensor<10xf32> to tensor<8xf32>
  %x0 = tensor.extract_slice %x[0] [6] [1] : tensor<8xf32> to tensor<6xf32>
  %s0 = tensor.extract_slice %s[0] [6] [1] : tensor<8xf32> to tensor<6xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x0 : tensor<6xf32>) outs(%s0 : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<6xf32>
  %i0 = tensor.insert_slice %h into %s[0] [6] [1] : tensor<6xf32> into tensor<8xf32>
  %x1 = tensor.extract_slice %x[6] [2] [1] : tensor<8xf32> to tensor<2xf32>
  %s1 = tensor.extract_slice %i0[6] [2] [1] : tensor<8xf32> to tensor<2xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x1 : tensor<2xf32>) outs(%s1 : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2xf32>
  %i1 = tensor.insert_slice %t into %i0[6] [2] [1] : tensor<2xf32> into tensor<8xf32>
  %p = tensor.insert_slice %i1 into %f[1] [8] [1] : tensor<8xf32> into tensor<10xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%i1 : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %p, %y : tensor<10xf32>, tensor<8xf32>
}

// -----

// A concatenation along an inner dimension whose first part is a layer
// split in two (its columns written by two ops, the second into a slice of
// what the first made), the result's empty tensor made after the parts.
// Each part's empty tensor becomes a slice of what the parts before it
// made, and bufferization copies nothing. Upstream's empty-tensor
// elimination alone replaces the split part's empty tensor only on its
// chain of insertions, not under the first op's slice: that part was
// computed apart and copied in.
// CHECK-LABEL: func.func @concat_in_place
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[P:.+]] = tensor.extract_slice %[[E]][0, 0] [2, 4] [1, 1]
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[P]][0, 0] [2, 2] [1, 1]
// CHECK: %[[A0:.+]] = linalg.generic {{.*}} outs(%[[S0]]
// CHECK: %[[I0:.+]] = tensor.insert_slice %[[A0]] into %[[P]][0, 0] [2, 2] [1, 1]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[I0]][0, 2] [2, 2] [1, 1]
// CHECK: %[[A1:.+]] = linalg.generic {{.*}} outs(%[[S1]]
// CHECK: %[[I1:.+]] = tensor.insert_slice %[[A1]] into %[[I0]][0, 2] [2, 2] [1, 1]
// CHECK: %[[C0:.+]] = tensor.insert_slice %[[I1]] into %[[E]][0, 0] [2, 4] [1, 1]
// CHECK: %[[S2:.+]] = tensor.extract_slice %[[C0]][0, 4] [2, 4] [1, 1]
// CHECK: %[[B:.+]] = linalg.fill {{.*}} outs(%[[S2]]
// CHECK: %[[C1:.+]] = tensor.insert_slice %[[B]] into %[[C0]][0, 4] [2, 4] [1, 1]
// CHECK: return %[[C1]]
// BUF-LABEL: func.func @concat_in_place
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @concat_in_place(%x: tensor<2x2xf32>) -> tensor<2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x4xf32>
  %s0 = tensor.extract_slice %e0[0, 0] [2, 2] [1, 1] : tensor<2x4xf32> to tensor<2x2xf32>
  %a0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x2xf32>) outs(%s0 : tensor<2x2xf32>) {
  ^bb0(%v: f32, %w: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<2x2xf32>
  %i0 = tensor.insert_slice %a0 into %e0[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x4xf32>
  %s1 = tensor.extract_slice %i0[0, 2] [2, 2] [1, 1] : tensor<2x4xf32> to tensor<2x2xf32>
  %a1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x2xf32>) outs(%s1 : tensor<2x2xf32>) {
  ^bb0(%v: f32, %w: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x2xf32>
  %i1 = tensor.insert_slice %a1 into %i0[0, 2] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x4xf32>
  %e1 = tensor.empty() : tensor<2x4xf32>
  %b = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %c0 = tensor.insert_slice %i1 into %e[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %c1 = tensor.insert_slice %b into %c0[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  return %c1 : tensor<2x8xf32>
}

// -----

// The parts' writers interleave (the second part's tensor is filled before
// the first part is written): left as it was.
// CHECK-LABEL: func.func @concat_interleaved
// CHECK: %[[E1:.+]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[F:.+]] = linalg.fill {{.*}} outs(%[[E1]]
// CHECK: %[[E0:.+]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[A:.+]] = linalg.generic {{.*}} outs(%[[E0]]
// CHECK: %[[B:.+]] = linalg.generic {{.*}} outs(%[[F]]
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[C0:.+]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 4] [1, 1]
// CHECK: tensor.insert_slice %[[B]] into %[[C0]][0, 4] [2, 4] [1, 1]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @concat_interleaved(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %e0 = tensor.empty() : tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x4xf32>) outs(%e0 : tensor<2x4xf32>) {
  ^bb0(%v: f32, %w: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x4xf32>) outs(%f : tensor<2x4xf32>) {
  ^bb0(%v: f32, %w: f32):
    %m = arith.maximumf %v, %w : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %c1 = tensor.insert_slice %b into %c0[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  return %c1 : tensor<2x8xf32>
}
