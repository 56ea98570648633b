"""Theano's ``theano.misc.pkl_utils`` path: dump, load and load_into of graphjit/compile/param_archive.py (parameters
saved as a zip of .npy files), re-exported."""

from graphjit.compile.param_archive import FORMAT, dump, load, load_into  # noqa: F401
