"""graphjit.config: defaults, validation, GRAPHJIT_FLAGS, change_flags."""

import os
import subprocess
import sys

import pytest

import graphjit as gj
from graphjit.config import Config, ConfigError, config, parse_flags_string


def run_python(code, **env):
    full_env = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env)


def test_defaults():
    fresh = Config()
    assert fresh.floatX == "float64" and fresh.mode == "FAST_RUN"
    assert fresh.opt_level == 3 and fresh.on_unused_input == "raise"
    assert fresh.cache_dir
    assert gj.config is config


def test_setting_validates_values():
    fresh = Config()
    fresh.floatX = "float32"
    assert fresh.floatX == "float32"
    with pytest.raises(ConfigError, match="floatX.*float64, float32, float16"):
        fresh.floatX = "int8"
    fresh.opt_level = "2"
    assert fresh.opt_level == 2
    with pytest.raises(ConfigError, match="0-3"):
        fresh.opt_level = 7
    with pytest.raises(ConfigError, match="0-3"):
        fresh.opt_level = "high"
    with pytest.raises(ConfigError, match="non-empty"):
        fresh.mode = ""
    fresh.cache_dir = "~/somewhere"
    assert not fresh.cache_dir.startswith("~")
    fresh.reset()
    assert fresh.floatX == "float64"


def test_unknown_flags_are_clear_errors():
    with pytest.raises(AttributeError, match="unknown graphjit flag 'floatx'.*floatX"):
        config.floatx
    with pytest.raises(ConfigError, match="unknown graphjit flag 'colour'"):
        config.colour = 1
    with pytest.raises(ConfigError, match="unknown graphjit flag"):
        with config.change_flags(colour=1):
            pass
    assert not hasattr(config, "_private")


def test_change_flags_restores_even_on_error():
    before = config.floatX
    with gj.change_flags(floatX="float32", mode="PY") as cfg:
        assert cfg.floatX == "float32" and config.mode == "PY"
    assert config.floatX == before and config.mode == "FAST_RUN"
    with pytest.raises(RuntimeError):
        with config.change_flags(floatX="float16"):
            raise RuntimeError
    assert config.floatX == before
    with pytest.raises(ConfigError):
        with config.change_flags(floatX="float32", opt_level=9):
            pass
    assert config.floatX == before


def test_change_flags_as_decorator():
    @config.change_flags(floatX="float32")
    def inside():
        return config.floatX

    assert inside() == "float32" and config.floatX == "float64"


def test_flags_snapshot_and_describe():
    assert config.flags()["floatX"] == config.floatX
    assert "floatX = 'float64'" in config.describe()
    assert "floatX" in dir(config)


def test_parse_flags_string():
    assert parse_flags_string("floatX=float32, mode=PY,") == {"floatX": "float32", "mode": "PY"}
    assert parse_flags_string("") == {}
    with pytest.raises(ConfigError, match="name=value"):
        parse_flags_string("floatX")


def test_environment_variable_is_read_at_import():
    code = "import graphjit as gj; print(gj.config.floatX, gj.config.mode, gj.config.opt_level)"
    result = run_python(code, GRAPHJIT_FLAGS="floatX=float32,mode=PY,opt_level=1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["float32", "PY", "1"]


def test_environment_variable_errors_name_the_variable():
    result = run_python("import graphjit", GRAPHJIT_FLAGS="floatx=float32")
    assert result.returncode != 0
    assert "GRAPHJIT_FLAGS" in result.stderr and "unknown graphjit flag 'floatx'" in result.stderr


def test_cache_dir_from_its_environment_variable(tmp_path):
    result = run_python("import graphjit as gj; print(gj.config.cache_dir)",
                        GRAPHJIT_CACHE_DIR=str(tmp_path))
    assert result.stdout.strip() == str(tmp_path)
