"""Printing graphs: debugprint (a tree), pprint/pp (a formula), to_dot/pydotprint (a picture), test values.

One module per idea: tree.py (debugprint, dprint), formula.py (PPrinter and the pprint instance) with
math_printers.py (how pprint writes graphjit's ops), dot.py (to_dot, pydotprint), values.py (print_test_value).
"""

from graphjit.printing.tree import TreeOptions, debugprint, dprint
from graphjit.printing.formula import FunctionPrinter, OperatorPrinter, PPrinter, pp, pprint
from graphjit.printing import math_printers  # noqa: F401  (teaches pprint graphjit's ops)
from graphjit.printing.dot import pydotprint, to_dot
from graphjit.printing.values import print_test_value
from graphjit.tensor.print_op import Print  # graphjit.printing.Print, as Theano's

__all__ = ["debugprint", "dprint", "pprint", "pp", "PPrinter", "OperatorPrinter", "FunctionPrinter",
           "TreeOptions", "pydotprint", "to_dot", "print_test_value", "Print"]
