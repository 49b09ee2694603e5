"""Configs from a built-in name, a JSON file or a dict, as normalized JSON."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Union

from . import _moejit
from .errors import MoejitError

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def config_json(config: ConfigLike) -> str:
    """The validated config as JSON text (the C++ API's form)."""
    if isinstance(config, Mapping):
        return _moejit.normalize_config_json(json.dumps(dict(config)))
    if isinstance(config, (str, os.PathLike)):
        text = os.fspath(config)
        if text in _moejit.builtin_models():
            return _moejit.builtin_config_json(text)
        if text.endswith(".json") or os.sep in text or os.path.exists(text):
            return _moejit.config_file_json(text)
        raise MoejitError(
            f"config = {text!r} is neither a built-in model ({', '.join(_moejit.builtin_models())}) "
            "nor a JSON file",
            "config",
        )
    raise MoejitError(f"config must be a built-in model name, a JSON file path or a dict, not {type(config).__name__}",
                      "config")


def config(config: ConfigLike) -> dict:
    """The config as a dict with every field (defaults filled in), validated."""
    return json.loads(config_json(config))
