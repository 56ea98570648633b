"""Compiling IR to code and loading it: target machine, engines, symbols the code needs, fork safety."""
