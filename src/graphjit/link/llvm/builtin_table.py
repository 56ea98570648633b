"""The LLVM backend's own registrations as data: which modules hold them and the versions they register.

A warm process (plan and object found in the disk cache) needs the lowering and layout versions of the classes
in its graph (the plan alias includes them, variant.py) but none of the lowerings' code: registry.py answers
versions from these tables until the modules below are loaded, and loads them all the first time anything asks
for an entry itself (a cold compile).  tests/link/llvm/test_lazy_lowerings.py checks the tables against the
registrations the modules make: a lowering whose version changes must change it here too (that test says so).
"""

from __future__ import annotations

# imported in this order by registry.load_builtins (debug last: ir/instrument.py -> ir/fallback.py needs
# ir/native_entry.py, which the others load, complete)
MODULES: tuple[str, ...] = (
    "graphjit.link.llvm.cpython.boxing",
    "graphjit.link.llvm.ops.ifelse",
    "graphjit.link.llvm.ops.alloc",
    "graphjit.link.llvm.ops.blas",
    "graphjit.link.llvm.ops.blas_vector",
    "graphjit.link.llvm.driver.elemwise",
    "graphjit.link.llvm.ops.extra_ops",
    "graphjit.link.llvm.ops.indexing",
    "graphjit.link.llvm.ops.linalg",
    "graphjit.link.llvm.ops.shape",
    "graphjit.link.llvm.ops.special",
    "graphjit.link.llvm.scalar.special_bodies",
    "graphjit.link.llvm.scalar.ufunc_bodies",
    "graphjit.link.llvm.scalar.zeta_bodies",
    "graphjit.link.llvm.ops.debug",
)

# imported by registry.load_builtins only once their trigger module is (then, or at the next lookup): the Scan
# lowering needs the scan package, which a process that never builds a Scan need not import (no graph of it can
# hold one); tests/link/llvm/test_lazy_lowerings.py imports the triggers
DEFERRED: dict[str, str] = {
    "graphjit.link.llvm.driver.scan": "graphjit.scan_module.op",
}

# op class (module.qualname) -> the version of its registered lowering
LOWERINGS: dict[str, tuple] = {
    "graphjit.gradient.GradientBlockOp": (1,),
    "graphjit.ifelse.IfElse": (1,),
    "graphjit.link.ops.DeepCopyOp": (1,),
    "graphjit.scan_module.op.Scan": (5,),
    "graphjit.tensor.advanced_subtensor.AdvancedIncSubtensor1": (1,),
    "graphjit.tensor.advanced_subtensor.AdvancedSubtensor1": (1,),
    "graphjit.tensor.alloc.ARange": (1,),
    "graphjit.tensor.alloc.Alloc": (2,),
    "graphjit.tensor.alloc.Eye": (1,),
    "graphjit.tensor.blas.Dot": (2,),
    "graphjit.tensor.blas.Matmul": (2,),
    "graphjit.tensor.blas.TensorDot": (2,),
    "graphjit.tensor.blas_gemm.Gemm": (1,),
    "graphjit.tensor.blas_vector.Gemv": (8,),
    "graphjit.tensor.blas_vector.Ger": (2,),
    "graphjit.tensor.elemwise.CAReduce": (3,),
    "graphjit.tensor.elemwise.DimShuffle": (1,),
    "graphjit.tensor.elemwise.Elemwise": (3,),
    "graphjit.tensor.elemwise_grad.SumToShape": (1,),
    "graphjit.tensor.extra_ops.ArgReduce": (1,),
    "graphjit.tensor.extra_ops.CumOp": (1,),
    "graphjit.tensor.join.Join": (1,),
    "graphjit.tensor.join.MakeVector": (1,),
    "graphjit.tensor.join.Split": (1,),
    "graphjit.tensor.linalg.cholesky.ChoSolve": (1,),
    "graphjit.tensor.linalg.cholesky.CholInvDiag": (1,),
    "graphjit.tensor.linalg.cholesky.Cholesky": (1,),
    "graphjit.tensor.linalg.diag.AllocDiag": (1,),
    "graphjit.tensor.linalg.diag.ExtractDiag": (1,),
    "graphjit.tensor.linalg.eigen.Eigh": (1,),
    "graphjit.tensor.linalg.eigen.QR": (1,),
    "graphjit.tensor.linalg.eigen.SVD": (1,),
    "graphjit.tensor.linalg.inverse.Det": (1,),
    "graphjit.tensor.linalg.inverse.Inv": (1,),
    "graphjit.tensor.linalg.inverse.SlogDet": (1,),
    "graphjit.tensor.linalg.lu.LU": (1,),
    "graphjit.tensor.linalg.lu.LUFactor": (1,),
    "graphjit.tensor.linalg.lu.LUSolve": (1,),
    "graphjit.tensor.linalg.solve.Solve": (1,),
    "graphjit.tensor.linalg.solve.SolveTriangular": (1,),
    "graphjit.tensor.print_op.Print": (1,),
    "graphjit.tensor.shape.Reshape": (1,),
    "graphjit.tensor.shape.Shape": (1,),
    "graphjit.tensor.shape.Shape_i": (1,),
    "graphjit.tensor.shape.SpecifyShape": (1,),
    "graphjit.tensor.special.LogSoftmax": (1,),
    "graphjit.tensor.special.LogSumExp": (1,),
    "graphjit.tensor.special.Softmax": (1,),
    "graphjit.tensor.special.TakeLabels": (1,),
    "graphjit.tensor.subtensor.IncSubtensor": (1,),
    "graphjit.tensor.subtensor.Subtensor": (1,),
}

# Type class (module.qualname) -> the version of its registered layout
LAYOUTS: dict[str, tuple] = {
    "graphjit.graph.params.EnumType": (1,),
    "graphjit.graph.type.Generic": (1,),
    "graphjit.scalar.basic.ScalarType": (1,),
    "graphjit.tensor.type.TensorType": (1,),
}

# op class -> the version of its branch lowering (ir/native_entry.py; not part of any key, checked for completeness)
BRANCH_LOWERINGS: dict[str, tuple] = {
    "graphjit.ifelse.IfElse": (1,),
}
