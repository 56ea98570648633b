"""Miscellaneous user utilities (Theano's theano.misc): pkl_utils, saving parameters as .npy files in a zip."""
