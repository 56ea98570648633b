"""graph/rewriting/db.py: the rewrite databases."""


def test_lazy_database_is_pristine_until_anything_registers_after_its_seal():
    """compile/rewrite_cache.py names a pristine database by module instead of describing every rewrite."""
    import sys
    import types

    from graphjit.graph.rewriting.db import LazyDatabase, SequenceDB

    lazy = LazyDatabase("gj_test_lazy_db_module", "db")
    assert lazy.pristine()                                   # not imported: only its module's own rewrites
    module = types.ModuleType("gj_test_lazy_db_module")
    module.db = SequenceDB()
    sys.modules[module.__name__] = module
    try:
        assert not lazy.pristine()                           # imported but never sealed
        module.db.seal()
        assert lazy.pristine()
        extra = SequenceDB()
        module.db.register("extra", extra)
        assert not lazy.pristine()                           # a registration after the seal
        module.db.seal()
        module.db.remove("extra")
        assert not lazy.pristine()                           # and a removal
    finally:
        del sys.modules[module.__name__]
