//===- Runtime.cpp - kiln._kiln.runtime: the runtime's C API --------------===//
//
// Binds a kiln_model handle as the class Model: open, describe, set the
// thread count, run on numpy arrays. Inputs are checked here against the
// model's dtypes and shapes (messages in numpy's words); everything else the
// runtime checks again. Outputs are fresh numpy arrays, 64-byte aligned. The
// GIL is released while a model opens, runs or changes its thread count.
//
// Errors are raised as the classes of kiln/_errors.py: ModelError when a
// model cannot be opened, InvalidInputError for wrong inputs, KilnError for
// anything else the runtime reports.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace py::literals;

namespace {

/// Raises the exception class `errorClass` of kiln/_errors.py.
[[noreturn]] void raiseKilnError(const char *errorClass,
                                 const std::string &message) {
  py::object type = py::module_::import("kiln._errors").attr(errorClass);
  PyErr_SetString(type.ptr(), message.c_str());
  throw py::error_already_set();
}

/// Frees `status`, raising `errorClass` with its message when it is an error.
void check(kiln_status status, const char *errorClass) {
  if (!status)
    return;
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  raiseKilnError(errorClass, message);
}

/// The numpy dtype holding a kiln_dtype. numpy has no bfloat16: bf16 tensors
/// are passed as uint16 arrays of the raw bits, and the 8-, 4- and 2-bit types
/// as uint8 arrays of their ABI bytes.
py::dtype numpyDtype(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return py::dtype("float32");
  case KILN_DTYPE_U8:
  // The narrow types travel as their ABI bytes (model_abi.h).
  case KILN_DTYPE_F8E4M3FN:
  case KILN_DTYPE_F8E4M3FNUZ:
  case KILN_DTYPE_F8E5M2:
  case KILN_DTYPE_F8E5M2FNUZ:
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
  case KILN_DTYPE_F4E2M1:
  case KILN_DTYPE_F8E8M0:
  case KILN_DTYPE_U2:
  case KILN_DTYPE_I2:
    return py::dtype("uint8");
  case KILN_DTYPE_I8:
    return py::dtype("int8");
  case KILN_DTYPE_U16:
  case KILN_DTYPE_BF16:
    return py::dtype("uint16");
  case KILN_DTYPE_I16:
    return py::dtype("int16");
  case KILN_DTYPE_I32:
    return py::dtype("int32");
  case KILN_DTYPE_I64:
    return py::dtype("int64");
  case KILN_DTYPE_BOOL:
    return py::dtype("bool");
  case KILN_DTYPE_F16:
    return py::dtype("float16");
  case KILN_DTYPE_F64:
    return py::dtype("float64");
  case KILN_DTYPE_U32:
    return py::dtype("uint32");
  case KILN_DTYPE_U64:
    return py::dtype("uint64");
  default:
    raiseKilnError("ModelError", "the model uses element type " +
                                     std::to_string(dtype) +
                                     ", which the Python package cannot map "
                                     "to a numpy dtype");
  }
}

/// "[1,3,224,224]", as the runtime writes shapes.
template <typename Dims> std::string formatShape(const Dims &dims) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i)
    os << (i ? "," : "") << dims[i];
  os << ']';
  return os.str();
}

std::string formatShape(const py::array &array) {
  std::vector<py::ssize_t> dims(array.shape(), array.shape() + array.ndim());
  return formatShape(dims);
}

/// One input or output, copied out of the model's descriptor. A symbolic
/// dimension has shape -1 and its name in `dimNames` ("" for a static one).
struct TensorInfo {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> shape;
  std::vector<std::string> dimNames;
  size_t byteSize;
  py::dtype numpy;

  /// (name, numpy dtype, shape with None for a symbolic dimension, element
  /// type, dimension names with None for a static dimension).
  py::tuple toPython() const {
    py::tuple shapeTuple(shape.size()), namesTuple(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      bool symbolic = !dimNames[i].empty();
      shapeTuple[i] = symbolic ? py::object(py::none()) : py::int_(shape[i]);
      namesTuple[i] =
          symbolic ? py::object(py::str(dimNames[i])) : py::object(py::none());
    }
    return py::make_tuple(name, numpy, shapeTuple,
                          std::string(kiln_dtype_name(dtype)), namesTuple);
  }

  /// The shape as the errors print it: "[batch,3,224,224]".
  std::string expected() const {
    std::ostringstream os;
    os << '[';
    for (size_t i = 0; i < shape.size(); ++i) {
      os << (i ? "," : "");
      if (dimNames[i].empty())
        os << shape[i];
      else
        os << dimNames[i];
    }
    os << ']';
    return os.str();
  }
};

/// An array of `numpy` dtype, `shape` and `bytes`, 64-byte aligned,
/// uninitialised.
py::array allocateOutput(const py::dtype &numpy,
                         const std::vector<int64_t> &shape, size_t bytes) {
  size_t rounded = (bytes + 63) & ~size_t(63);
  void *data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!data)
    throw std::bad_alloc();
  py::capsule owner(data, [](void *p) { std::free(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array(numpy, dims, data, owner);
}

/// An opened model. Its inputs and outputs are described once, at open, so
/// that reading them never touches the handle; the handle itself is guarded
/// so that close() cannot free it under a run in another thread.
class Model {
public:
  Model(const std::string &path, int32_t numThreads) {
    kiln_model_options options;
    kiln_model_options_init(&options);
    options.num_threads = numThreads;
    kiln_status status;
    {
      py::gil_scoped_release noGil;
      status = kiln_model_open(path.c_str(), &options, &model);
    }
    if (status && kiln_status_code(status) == KILN_STATUS_INVALID_ARGUMENT) {
      std::string message = kiln_status_message(status);
      kiln_status_free(status);
      throw py::value_error(message);
    }
    check(status, "ModelError");
    const kiln_abi_model *d = kiln_model_descriptor(model);
    targetTriple = d->target_triple;
    cpu = d->cpu;
    cpuFeatures = d->cpu_features;
    producer = d->producer;
    device = d->abi_version >= 3 && d->device == KILN_ABI_DEVICE_CUDA ? "cuda"
                                                                      : "cpu";
    try {
      for (size_t k = 0; k < kiln_model_num_symbols(model); ++k) {
        kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
        check(kiln_model_symbol_info(model, k, &symbol), "ModelError");
        symbols.push_back(
            {symbol.name, symbol.min, symbol.max, symbol.data_dependent != 0});
      }
      describe(kiln_model_num_inputs(model), kiln_model_input_info, inputs);
      describe(kiln_model_num_outputs(model), kiln_model_output_info, outputs);
    } catch (...) {
      kiln_model_release(model);
      model = nullptr;
      throw;
    }
  }

  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { kiln_model_release(model); }

  void close() {
    py::gil_scoped_release noGil;
    std::unique_lock<std::shared_mutex> lock(mutex);
    kiln_model_release(model);
    model = nullptr;
  }

  bool closed() const { return model == nullptr; }

  int32_t getNumThreads() {
    std::shared_lock<std::shared_mutex> lock(mutex);
    return kiln_model_num_threads(model);
  }

  void setNumThreads(int32_t numThreads) {
    kiln_status status = nullptr;
    bool wasClosed = false;
    {
      py::gil_scoped_release noGil;
      std::shared_lock<std::shared_mutex> lock(mutex);
      if (model)
        status = kiln_model_set_num_threads(model, numThreads);
      else
        wasClosed = true;
    }
    if (wasClosed)
      raiseKilnError("KilnError", "the model is closed");
    if (status && kiln_status_code(status) == KILN_STATUS_INVALID_ARGUMENT) {
      std::string message = kiln_status_message(status);
      kiln_status_free(status);
      throw py::value_error(message);
    }
    check(status, "KilnError");
  }

  /// Runs the model on `feeds`, one array per input in the model's order.
  py::list run(const py::sequence &feeds) {
    if (feeds.size() != inputs.size())
      raiseKilnError("InvalidInputError",
                     "expected " + std::to_string(inputs.size()) +
                         " inputs, got " + std::to_string(feeds.size()));
    py::module_ numpy = py::module_::import("numpy");
    std::vector<py::array> arrays;
    std::vector<kiln_tensor> in(inputs.size());
    // Each input's shape as given: a symbolic dimension takes any size, which
    // the runtime checks against its bounds and the other inputs.
    std::vector<std::vector<int64_t>> inShapes(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorInfo &info = inputs[i];
      py::array array = numpy.attr("asarray")(feeds[i]);
      bool sameShape =
          array.ndim() == static_cast<py::ssize_t>(info.shape.size());
      for (size_t d = 0; sameShape && d < info.shape.size(); ++d)
        sameShape =
            !info.dimNames[d].empty() || array.shape(d) == info.shape[d];
      if (!array.dtype().equal(info.numpy) || !sameShape)
        raiseKilnError("InvalidInputError",
                       "input '" + info.name + "': expected " +
                           std::string(py::str(info.numpy)) + " " +
                           info.expected() + ", got " +
                           std::string(py::str(array.dtype())) + " " +
                           formatShape(array));
      // A strided or misaligned view is copied into a dense array.
      array =
          numpy.attr("require")(array, py::none(), py::make_tuple("C", "A"));
      inShapes[i].assign(array.shape(), array.shape() + array.ndim());
      in[i] =
          KILN_TENSOR_INIT(info.dtype, static_cast<int32_t>(inShapes[i].size()),
                           inShapes[i].data(), const_cast<void *>(array.data()),
                           static_cast<size_t>(array.nbytes()));
      arrays.push_back(std::move(array));
    }

    // The outputs' shapes in this run, from the inputs (which the runtime
    // checks here first).
    std::vector<std::vector<int64_t>> outShapes(outputs.size());
    std::vector<size_t> outBytes(outputs.size());
    kiln_status status = nullptr;
    bool wasClosed = false;
    {
      py::gil_scoped_release noGil;
      std::shared_lock<std::shared_mutex> lock(mutex);
      for (size_t i = 0; model && !status && i < outputs.size(); ++i) {
        outShapes[i].resize(outputs[i].shape.size());
        status = kiln_model_output_shape(model, in.data(), in.size(), i,
                                         outShapes[i].data(),
                                         outShapes[i].size(), &outBytes[i]);
      }
      wasClosed = !model;
    }
    if (wasClosed)
      raiseKilnError("KilnError", "the model is closed");
    if (status && kiln_status_code(status) == KILN_STATUS_INVALID_ARGUMENT)
      check(status, "InvalidInputError");
    check(status, "KilnError");

    // Each output at the size kiln_model_output_shape gives (a
    // data-dependent dimension at its largest); the run writes its shape.
    std::vector<py::array> arraysOut;
    std::vector<kiln_tensor> out(outputs.size());
    std::vector<std::vector<int64_t>> runShapes(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const TensorInfo &info = outputs[i];
      py::array array = allocateOutput(info.numpy, outShapes[i], outBytes[i]);
      runShapes[i].resize(outShapes[i].size());
      out[i] = KILN_TENSOR_INIT(
          info.dtype, static_cast<int32_t>(outShapes[i].size()),
          outShapes[i].data(), array.mutable_data(), outBytes[i]);
      out[i].out_shape = runShapes[i].data();
      arraysOut.push_back(std::move(array));
    }

    {
      py::gil_scoped_release noGil;
      std::shared_lock<std::shared_mutex> lock(mutex);
      if (model)
        status =
            kiln_model_run(model, in.data(), in.size(), out.data(), out.size());
      else
        wasClosed = true;
    }
    if (wasClosed)
      raiseKilnError("KilnError", "the model is closed");
    if (status && kiln_status_code(status) == KILN_STATUS_INVALID_ARGUMENT)
      check(status, "InvalidInputError");
    check(status, "KilnError");
    // An output smaller than its room holds its elements at the start.
    py::list results;
    for (size_t i = 0; i < outputs.size(); ++i) {
      py::array array = std::move(arraysOut[i]);
      if (runShapes[i] != outShapes[i]) {
        int64_t count = 1;
        py::tuple shape(runShapes[i].size());
        for (size_t d = 0; d < runShapes[i].size(); ++d) {
          count *= runShapes[i][d];
          shape[d] = py::int_(runShapes[i][d]);
        }
        array = array.attr("reshape")(-1)
                    .attr("__getitem__")(py::slice(0, count, 1))
                    .attr("reshape")(shape);
      }
      results.append(std::move(array));
    }
    return results;
  }

  py::list describeAll(const std::vector<TensorInfo> &infos) const {
    py::list list;
    for (const TensorInfo &info : infos)
      list.append(info.toPython());
    return list;
  }

  std::vector<TensorInfo> inputs, outputs;
  struct Symbol {
    std::string name;
    int64_t min, max;
    bool dataDependent;
  };
  std::vector<Symbol> symbols;
  std::string targetTriple, cpu, cpuFeatures, producer, device;

private:
  using InfoFn = kiln_status (*)(const kiln_model *, size_t,
                                 kiln_tensor_info *);

  void describe(size_t count, InfoFn infoFn, std::vector<TensorInfo> &infos) {
    for (size_t i = 0; i < count; ++i) {
      kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
      check(infoFn(model, i, &info), "ModelError");
      std::vector<std::string> dimNames(static_cast<size_t>(info.rank));
      for (int32_t d = 0; d < info.rank; ++d) {
        kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
        if (info.dim_symbols[d] >= 0) {
          check(kiln_model_symbol_info(
                    model, static_cast<size_t>(info.dim_symbols[d]), &symbol),
                "ModelError");
          dimNames[d] = symbol.name;
        }
      }
      infos.push_back({info.name, info.dtype,
                       std::vector<int64_t>(info.shape, info.shape + info.rank),
                       std::move(dimNames), info.byte_size,
                       numpyDtype(info.dtype)});
    }
  }

  kiln_model *model = nullptr;
  std::shared_mutex mutex;
};

} // namespace

void init_kiln_runtime(py::module_ &&m) {
  m.def("abi_version", &kiln_runtime_abi_version,
        "The newest model ABI version this runtime loads.");

  py::class_<Model>(m, "Model")
      .def(py::init<const std::string &, int32_t>(), "path"_a,
           "num_threads"_a = 0,
           "Opens and checks a compiled model; num_threads 0 is the "
           "runtime's default.")
      .def_property_readonly(
          "inputs", [](const Model &m) { return m.describeAll(m.inputs); },
          "(name, numpy dtype, shape, element type, dimension names) per "
          "input, in order; a symbolic dimension's size is None and its "
          "name a string, a static one's name None.")
      .def_property_readonly(
          "outputs", [](const Model &m) { return m.describeAll(m.outputs); },
          "The same per output, in order.")
      .def_property_readonly(
          "symbols",
          [](const Model &m) {
            py::list list;
            for (const Model::Symbol &symbol : m.symbols)
              list.append(py::make_tuple(symbol.name, symbol.min, symbol.max,
                                         symbol.dataDependent));
            return list;
          },
          "(name, min, max, data_dependent) per symbolic dimension.")
      .def_property("num_threads", &Model::getNumThreads, &Model::setNumThreads)
      .def_readonly("target_triple", &Model::targetTriple)
      .def_readonly("cpu", &Model::cpu)
      .def_readonly("cpu_features", &Model::cpuFeatures)
      .def_readonly("producer", &Model::producer)
      .def_readonly("device", &Model::device,
                    "Where the model runs: \"cpu\", or \"cuda\" for a model "
                    "compiled with target=\"nvptx\".")
      .def("run", &Model::run, "feeds"_a,
           "Runs the model on one array per input, in order; returns one "
           "fresh array per output, in order.")
      .def("close", &Model::close)
      .def_property_readonly("closed", &Model::closed);
}
