//===- TensorFile.h - .npy and ONNX TensorProto files ----------*- C++ -*-===//
//
// Reading and writing the tensor files kiln-run takes and produces: NumPy
// .npy (versions 1.0, 2.0, 3.0; little-endian; C order) and ONNX TensorProto
// .pb (the protobuf wire format, decoded by hand). Every reader is
// bounds-checked: a malformed or truncated file gives an error message, never
// undefined behaviour. Errors are returned as strings: empty means success.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILNRUN_TENSORFILE_H
#define KILN_TOOLS_KILNRUN_TENSORFILE_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// A dense row-major tensor in memory. Its data is 64-byte aligned.
class HostTensor {
public:
  int32_t dtype = 0;          // a kiln_dtype
  std::vector<int64_t> shape; // each >= 0
  std::string name;           // a TensorProto's name; empty for .npy

  /// Replaces the data with `byteSize` zero bytes; false if out of memory.
  bool allocate(size_t byteSize);
  uint8_t *data() { return data_.get(); }
  const uint8_t *data() const { return data_.get(); }
  size_t byteSize() const { return byteSize_; }

private:
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t byteSize_ = 0;
};

/// Decodes a whole .npy file held in `bytes`.
std::string parseNpy(const uint8_t *bytes, size_t size, HostTensor &out);

/// Encodes a tensor as a .npy file (version 1.0, or 2.0 for a very long
/// header). bf16 has no NumPy dtype and is written as '<u2' bit patterns.
std::string encodeNpy(int32_t dtype, const int64_t *shape, int32_t rank,
                      const void *data, size_t byteSize, std::string &out);

/// Decodes a serialised onnx.TensorProto held in `bytes`.
std::string parseTensorProto(const uint8_t *bytes, size_t size,
                             HostTensor &out);

/// Reads `path`: .npy if it starts with the NumPy magic string, else a
/// TensorProto if its name ends in ".pb".
std::string readTensorFile(const std::string &path, HostTensor &out);

/// Writes `path` as .npy (see encodeNpy).
std::string writeNpyFile(const std::string &path, int32_t dtype,
                         const int64_t *shape, int32_t rank, const void *data,
                         size_t byteSize);

/// Formats a shape as "[1,3,224,224]".
std::string formatShape(const int64_t *shape, size_t rank);

} // namespace kiln

#endif // KILN_TOOLS_KILNRUN_TENSORFILE_H
