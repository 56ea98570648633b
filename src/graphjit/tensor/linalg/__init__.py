"""Linear algebra with numpy.linalg / scipy.linalg names and semantics, batched over leading dimensions.

Every function works on stacks of matrices (the last two axes), like numpy's; results are float32 for
float32 inputs and float64 otherwise.  See docs/linalg.md.
"""

from graphjit.tensor.linalg._common import LinAlgError, mT, tril, triu  # noqa: F401
from graphjit.tensor.linalg.cholesky import (Cholesky, ChoSolve, CholInvDiag, cho_factor, cho_solve,  # noqa: F401
                                             chol_inv_diag, cholesky)
from graphjit.tensor.linalg.diag import AllocDiag, ExtractDiag, diagonal, trace  # noqa: F401
from graphjit.tensor.linalg.eigen import (QR, SVD, Eig, Eigh, EighGeneral, eig, eigh, eigvals, eigvalsh,  # noqa: F401
                                        qr, svd)
from graphjit.tensor.linalg.functions import Expm, Lstsq, expm, kron, lstsq, matrix_power, norm  # noqa: F401
from graphjit.tensor.linalg.inverse import Det, Inv, Pinv, SlogDet, det, inv, pinv, slogdet  # noqa: F401
from graphjit.tensor.linalg.lu import LU, LUFactor, LUSolve, lu, lu_factor, lu_solve  # noqa: F401
from graphjit.tensor.linalg.solve import Solve, SolveTriangular, solve, solve_triangular  # noqa: F401

__all__ = ["LinAlgError", "cholesky", "cho_factor", "cho_solve", "chol_inv_diag", "diagonal", "trace", "eig",
           "eigvals", "eigh", "eigvalsh", "qr", "svd", "expm", "kron", "lstsq", "matrix_power", "norm", "det", "inv", "pinv",
           "slogdet", "lu", "lu_factor", "lu_solve", "solve", "solve_triangular", "tril", "triu", "mT"]
