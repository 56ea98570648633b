"""function(), Function, In/Out, shared variables and the modes (FAST_RUN, PY, DebugMode, NanGuardMode...)."""

from graphjit.compile.debugmode import DebugMode, DebugModeError
from graphjit.compile.function_dump import function_dump, load_function_dump
from graphjit.compile.mode import Mode, get_mode, register_mode
from graphjit.compile.monitormode import MonitorMode
from graphjit.compile.nanguardmode import NanGuardError, NanGuardMode

register_mode("DebugMode", DebugMode())
register_mode("NanGuardMode", NanGuardMode())

__all__ = ["DebugMode", "DebugModeError", "function_dump", "load_function_dump", "MonitorMode", "NanGuardError", "NanGuardMode", "Mode", "get_mode",
           "register_mode"]
