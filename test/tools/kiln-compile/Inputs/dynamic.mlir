func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> (tensor<?x4xf32> {kiln.name = "y"}) {
  %0 = graph.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
