# Lit configuration of Kiln's tests: textual IR through kiln-opt, and the
# tools on small models.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
# Folders that hold other kinds of tests (unit, python) or inputs.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "unit", "python", "Inputs", "import", "conformance"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%kiln_src_root", config.kiln_src_root))
# The Python of Kiln's virtual environment (numpy, onnx).
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kiln_tools_dir, append_path=True)

tools = [ToolSubst("kiln-opt", unresolved="fatal")]
for optional in ["kiln-compile", "kiln-run"]:
    if os.path.exists(os.path.join(config.kiln_tools_dir, optional)):
        tools.append(ToolSubst(optional))
        config.available_features.add(optional)
llvm_config.add_tool_substitutions(tools, [config.kiln_tools_dir, config.llvm_tools_dir])

# The CUDA toolkit's ptxas, which the nvptx target needs (as kiln-compile
# finds it: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda).
for root in [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]:
    if root and os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
        config.available_features.add("cuda-toolkit")
        break
