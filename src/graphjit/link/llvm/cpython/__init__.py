"""The CPython boundary emitted in IR: the wrapper, argument unboxing and boxing."""
