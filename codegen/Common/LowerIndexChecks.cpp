//===- LowerIndexChecks.cpp - Run-time index checks for the model ABI -----===//
//
// A gather or scatter clamps the indices it reads, so nothing is read or
// written out of bounds; kiln.check_index ops beside it (made by the lowering
// to linalg) say whether an index was out of range, which ONNX makes an
// error. Here each check becomes a store of its number and the offending
// index into a thread-local slot that kiln_abi_run clears before the run
// and turns into KILN_ABI_RUN_INDEX_ERROR after it (lib/Target/ModelABI.cpp);
// on the GPU, into the run's kiln_abi_run_error in device memory, an
// argument of the entry that the runtime reads after the run.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENLOWERINDEXCHECKS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// Whether `op` runs inside a loop whose iterations may run on other
/// threads than the caller's.
bool inParallelLoop(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (isa<scf::ParallelOp, scf::ForallOp, omp::ParallelOp>(parent))
      return true;
  return false;
}

struct CodegenLowerIndexChecksPass
    : impl::CodegenLowerIndexChecksBase<CodegenLowerIndexChecksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CheckIndexOp> checks;
    module.walk([&](CheckIndexOp check) { checks.push_back(check); });
    if (slot != "thread-local" && slot != "argument") {
      module.emitError() << "unknown slot '" << slot
                         << "' for the index checks (thread-local or "
                            "argument)";
      return signalPassFailure();
    }
    if (checks.empty())
      return;
    bool argument = slot == "argument";
    for (CheckIndexOp check : checks)
      if (inParallelLoop(check)) {
        check.emitOpError("inside a parallel loop: its failure would be "
                          "recorded on another thread than the run's");
        return signalPassFailure();
      }

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Type i64 = b.getI64Type();
    // Where a failed check writes: the thread-local [2 x i64] (its number
    // + 1, 0 meaning none) or the function's kiln_abi_run_error argument
    // (its number, -1 meaning none).
    Value errorArgument;
    LLVM::GlobalOp global;
    if (argument) {
      auto func = checks.front()->getParentOfType<func::FuncOp>();
      for (CheckIndexOp check : checks)
        if (check->getParentOfType<func::FuncOp>() != func) {
          check.emitOpError("in another function than the first check's: "
                            "the run's error slot is an argument of one");
          return signalPassFailure();
        }
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, MemRefType::get({2}, i64), {},
                                     func.getLoc())))
        return signalPassFailure();
      errorArgument = func.getArgument(index);
      module->setAttr(attr::kRunErrorArgument, b.getUnitAttr());
    } else {
      b.setInsertionPointToStart(module.getBody());
      global = LLVM::GlobalOp::create(
          b, module.getLoc(), LLVM::LLVMArrayType::get(i64, 2),
          /*isConstant=*/false, LLVM::Linkage::Internal, kRunErrorGlobal,
          b.getZeroAttr(RankedTensorType::get({2}, i64)), /*alignment=*/8,
          /*addrSpace=*/0, /*dsoLocal=*/true, /*thread_local_=*/true);
    }
    auto ptrType = LLVM::LLVMPointerType::get(ctx);

    SmallVector<Attribute> table;
    for (auto [k, check] : llvm::enumerate(checks)) {
      int64_t low = check.getLowAttr().getInt();
      int64_t high = check.getHighAttr().getInt();
      table.push_back(b.getDictionaryAttr({
          b.getNamedAttr("source", check.getSourceAttr()),
          b.getNamedAttr("what", check.getWhatAttr()),
          b.getNamedAttr("low", b.getI64IntegerAttr(low)),
          b.getNamedAttr("high", b.getI64IntegerAttr(high)),
      }));
      Location loc = check.getLoc();
      b.setInsertionPoint(check);
      auto constant = [&](int64_t value) -> Value {
        return arith::ConstantIntOp::create(b, loc, i64, value);
      };
      Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          check.getMin(), constant(low));
      Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          check.getMax(), constant(high));
      Value bad = arith::OrIOp::create(b, loc, below, above);
      auto ifBad = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifBad.thenBlock());
      // The slot's two words: read the first, write either.
      Value error;
      auto position = [&](int64_t i) -> Value {
        return arith::ConstantIndexOp::create(b, loc, i);
      };
      auto load = [&]() -> Value {
        if (argument)
          return memref::LoadOp::create(b, loc, errorArgument, position(0));
        return LLVM::LoadOp::create(b, loc, i64, error);
      };
      auto store = [&](Value value, int64_t i) {
        if (argument) {
          memref::StoreOp::create(b, loc, value, errorArgument, position(i));
          return;
        }
        Value at = i == 0 ? error
                          : LLVM::GEPOp::create(b, loc, ptrType, i64, error,
                                                ArrayRef<LLVM::GEPArg>{i});
        LLVM::StoreOp::create(b, loc, value, at);
      };
      if (!argument) {
        Value address =
            LLVM::AddressOfOp::create(b, loc, ptrType, global.getName());
        error = LLVM::ThreadlocalAddressOp::create(b, loc, ptrType, address);
      }
      Value none = arith::CmpIOp::create(b, loc,
                                         argument ? arith::CmpIPredicate::slt
                                                  : arith::CmpIPredicate::eq,
                                         load(), constant(0));
      auto ifFirst = scf::IfOp::create(b, loc, none, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      store(constant(argument ? k : k + 1), 0);
      store(arith::SelectOp::create(b, loc, above, check.getMax(),
                                    check.getMin()),
            1);
      check.erase();
    }
    module->setAttr(attr::kIndexChecks, b.getArrayAttr(table));
  }
};

} // namespace
} // namespace kiln::codegen
