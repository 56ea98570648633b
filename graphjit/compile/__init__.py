"""function(), Function, In/Out, shared variables and the modes (FAST_RUN, PY, DebugMode, NanGuardMode...)."""

from graphjit.compile.debugmode import DebugMode, DebugModeError
from graphjit.compile.mode import Mode, get_mode, register_mode
from graphjit.compile.monitormode import MonitorMode
from graphjit.compile.nanguardmode import NanGuardError, NanGuardMode

register_mode("DebugMode", DebugMode())
register_mode("NanGuardMode", NanGuardMode())

__all__ = ["DebugMode", "DebugModeError", "MonitorMode", "NanGuardError", "NanGuardMode", "Mode", "get_mode",
           "register_mode"]
