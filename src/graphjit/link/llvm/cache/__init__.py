"""Caches of compiled code: objects by IR hash on disk, plans by graph structure, loaded graphs in memory."""
