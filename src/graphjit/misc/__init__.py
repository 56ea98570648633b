"""Theano's ``theano.misc`` path: ``graphjit.misc.pkl_utils`` re-exports compile/param_archive.py (parameters
saved as a zip of .npy files)."""
