"""Symbols that generated IR calls, published with ``llvmlite.binding.add_symbol`` so the IR holds no addresses.

``ensure_runtime()`` (idempotent) publishes:

* numpy's C API from the ``_ARRAY_API`` capsule (ABI checked at entry 0):
  ``gj_PyArray_Type`` (the type object itself: use the symbol's address),
  ``PyArray_Descr* gj_PyArray_DescrFromType(int type_num)``,
  ``PyObject* gj_PyArray_New(PyTypeObject*, int nd, npy_intp* dims, int type_num, npy_intp* strides,
  void* data, int itemsize, int flags, PyObject* obj)``,
  ``PyObject* gj_PyArray_NewFromDescr(PyTypeObject*, PyArray_Descr* (stolen), int nd, npy_intp* dims,
  npy_intp* strides, void* data, int flags, PyObject* obj)``,
  ``PyObject* gj_PyArray_Zeros(int nd, npy_intp* dims, PyArray_Descr* (stolen), int fortran)``,
  ``PyObject* gj_PyArray_Empty(int nd, npy_intp* dims, PyArray_Descr* (stolen), int fortran)``,
  ``int gj_PyArray_SetBaseObject(PyArrayObject*, PyObject* (stolen))``;
* the CPython API names in ``PY_FUNCTIONS``/``PY_DATA`` under their own names (published from ctypes only
  when the process does not already resolve them);
* ``gj_native_error``: errors.native_error, which the wrapper calls with an error record to raise it;
* ``gj_SlowPath``: the exception class the IR wrapper raises when the fast path does not accept its args;
* ``GOMP_parallel``/``omp_get_thread_num``/``omp_get_num_threads`` (also as ``gj_``-prefixed aliases) when
  libgomp loads.

``blas_source()`` (cheap, once) picks the BLAS: numpy's own OpenBLAS, published as ``gj_np_<name>`` (ILP64; the
lowerings reach it through shims in the graph's module, jit/blas_library.py), or where numpy has another BLAS, scipy's
Fortran BLAS, published by ``ensure_blas()`` (it imports scipy.linalg, ~0.4 s) as ``gj_dgemm`` etc.  The
lowerings see the LP64 Fortran ABI either way: every argument is a pointer, e.g.
``void dgemm(char* transa, char* transb, int* m, int* n, int* k, double* alpha, double* a, int* lda,
double* b, int* ldb, double* beta, double* c, int* ldc)``; ``BLAS_SIGNATURES`` lists them all.
"""

from __future__ import annotations

import ctypes


from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.basic import SlowPath  # noqa: F401  (published to IR as gj_SlowPath)

from graphjit.link.llvm.jit.capsules import capsule_address
from graphjit.link.llvm.jit.symbols import provide
from graphjit.link.llvm.ir.errors import native_error
from graphjit.link.llvm.jit.blas_library import numpy_routines
from graphjit.graph import forksafe

NUMPY_ABI_VERSION = 0x02000000
NUMPY_API_INDEX = {"PyArray_Type": 2, "PyArray_DescrFromType": 45, "PyArray_New": 93,
                   "PyArray_NewFromDescr": 94, "PyArray_Zeros": 183, "PyArray_Empty": 184,
                   "PyArray_SetBaseObject": 282}
PY_FUNCTIONS = ("PyErr_SetString", "PyErr_Format", "PyErr_Occurred", "PyErr_Clear", "PyErr_SetNone",
                "PyFloat_AsDouble", "PyLong_AsLongLong", "PyLong_AsDouble", "PyTuple_New", "Py_IncRef",
                "Py_DecRef", "PyEval_SaveThread", "PyEval_RestoreThread", "PyGILState_Ensure",
                "PyGILState_Release", "PyObject_Vectorcall")
PY_DATA = ("PyExc_TypeError", "PyExc_ValueError", "PyExc_IndexError", "PyExc_RuntimeError",
           "PyExc_MemoryError", "PyExc_ZeroDivisionError", "PyFloat_Type", "PyLong_Type", "PyBool_Type",
           "_Py_TrueStruct", "_Py_FalseStruct", "_Py_NoneStruct")
BLAS_SIGNATURES = {
    "dgemm": "void(char* transa, char* transb, int* m, int* n, int* k, double* alpha, double* a, int* lda, "
             "double* b, int* ldb, double* beta, double* c, int* ldc)",
    "sgemm": "void(char* transa, char* transb, int* m, int* n, int* k, float* alpha, float* a, int* lda, "
             "float* b, int* ldb, float* beta, float* c, int* ldc)",
    "dgemv": "void(char* trans, int* m, int* n, double* alpha, double* a, int* lda, double* x, int* incx, "
             "double* beta, double* y, int* incy)",
    "sgemv": "void(char* trans, int* m, int* n, float* alpha, float* a, int* lda, float* x, int* incx, "
             "float* beta, float* y, int* incy)",
    "ddot": "double(int* n, double* x, int* incx, double* y, int* incy)",
    "sdot": "float(int* n, float* x, int* incx, float* y, int* incy)",
    "dger": "void(int* m, int* n, double* alpha, double* x, int* incx, double* y, int* incy, double* a, "
            "int* lda)",
    "sger": "void(int* m, int* n, float* alpha, float* x, int* incx, float* y, int* incy, float* a, int* lda)",
    "zgemm": "void(char* transa, char* transb, int* m, int* n, int* k, zcomplex* alpha, zcomplex* a, int* lda, "
             "zcomplex* b, int* ldb, zcomplex* beta, zcomplex* c, int* ldc)",
    "cgemm": "void(char* transa, char* transb, int* m, int* n, int* k, ccomplex* alpha, ccomplex* a, int* lda, "
             "ccomplex* b, int* ldb, ccomplex* beta, ccomplex* c, int* ldc)",
}
GOMP_SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


class RuntimeInfo:
    """What ensure_runtime/ensure_blas published (one per process; a plain class: no dataclass to define in
    every cold compile)."""

    def __init__(self) -> None:
        self.numpy_api = 0
        self.numpy_abi_version = 0
        self.python_from_ctypes: list[str] = []
        self.gomp_available = False
        self.blas: dict[str, int] = {}
        self.blas_source = ""       # "numpy" (its bundled ILP64 OpenBLAS, through shims) or "scipy" (cython_blas)

    def __repr__(self) -> str:
        return f"RuntimeInfo({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


_INFO = RuntimeInfo()
_DONE = False
_LOCK = forksafe.new_lock()


def _publish_numpy() -> None:
    from numpy._core import _multiarray_umath
    api = capsule_address(_multiarray_umath._ARRAY_API, None)
    table = ctypes.cast(api, ctypes.POINTER(ctypes.c_void_p))
    version = ctypes.CFUNCTYPE(ctypes.c_uint)(table[0])()
    if version != NUMPY_ABI_VERSION:
        raise ImportError(f"graphjit: numpy C ABI {version:#x}, expected {NUMPY_ABI_VERSION:#x}")
    for name, index in NUMPY_API_INDEX.items():
        _binding.add_symbol("gj_" + name, table[index])
    _INFO.numpy_api, _INFO.numpy_abi_version = api, version


def _publish_python() -> None:
    for name in PY_FUNCTIONS:
        if not _binding.address_of_symbol(name):
            _binding.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
            _INFO.python_from_ctypes.append(name)
    for name in PY_DATA:
        if not _binding.address_of_symbol(name):
            _binding.add_symbol(name, ctypes.addressof(ctypes.c_void_p.in_dll(ctypes.pythonapi, name)))
            _INFO.python_from_ctypes.append(name)
    # numba publishes PyExc_<name> as the exception object itself (id), CPython's symbol is the variable
    # holding it: graphjit's IR loads through gj_PyExc_<name>, which no other llvmlite user redefines
    for name in PY_DATA:
        if name.startswith("PyExc_"):
            _binding.add_symbol("gj_" + name, ctypes.addressof(ctypes.c_void_p.in_dll(ctypes.pythonapi, name)))
    _binding.add_symbol("gj_SlowPath", id(SlowPath))
    _binding.add_symbol("gj_native_error", id(native_error))      # a module global: it lives as long as we do


def _publish_gomp() -> None:
    try:
        _binding.load_library("libgomp.so.1")
    except RuntimeError:
        return
    addrs = {name: _binding.address_of_symbol(name) for name in GOMP_SYMBOLS}
    if all(addrs.values()):
        for name, addr in addrs.items():
            _binding.add_symbol("gj_" + name, addr)
        _INFO.gomp_available = True


def ensure_runtime(blas: bool = False) -> RuntimeInfo:
    """Publish every runtime symbol once (cheap on repeat); blas=True also runs ensure_blas()."""
    global _DONE
    if not _DONE:
        with _LOCK:
            if not _DONE:
                _publish_numpy()
                _publish_python()
                _publish_gomp()
                _DONE = True
    if blas:
        ensure_blas()
    return _INFO


def blas_source() -> str:
    """Which BLAS the products call in this process: "numpy" (its bundled OpenBLAS) or "scipy" (cython_blas)."""
    if not _INFO.blas_source:
        with _LOCK:
            if not _INFO.blas_source:
                routines = numpy_routines(list(BLAS_SIGNATURES))
                if routines is not None:
                    for name, addr in routines.items():
                        _binding.add_symbol("gj_np_" + name, addr)
                    _INFO.blas.update(routines)
                _INFO.blas_source = "numpy" if routines is not None else "scipy"
    return _INFO.blas_source


def ensure_blas() -> dict[str, int]:
    """Publish the BLAS routines (numpy's as gj_np_<name>, else scipy's as gj_<name>); name -> address."""
    if blas_source() == "scipy" and not _INFO.blas:
        with _LOCK:
            if not _INFO.blas:
                addrs = _scipy_blas()
                for name, addr in addrs.items():
                    _binding.add_symbol("gj_" + name, addr)
                _INFO.blas.update(addrs)
    return _INFO.blas


for _name in BLAS_SIGNATURES:                   # for cache hits that skip lowering (jit/symbols.py)
    provide("gj_np_" + _name, blas_source)
    provide("gj_" + _name, ensure_blas)


def _scipy_blas() -> dict[str, int]:
    """scipy's Fortran BLAS from its cython_blas capsules (importing scipy.linalg costs ~0.4 s)."""
    from scipy.linalg import cython_blas
    addrs = {}
    for name in BLAS_SIGNATURES:
        capsule = cython_blas.__pyx_capi__[name]
        addrs[name] = capsule_address(capsule)
    return addrs
