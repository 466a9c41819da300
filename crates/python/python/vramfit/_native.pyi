"""Type stubs of the Rust half; the documented API is vramfit's own functions."""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

_Path = Union[str, "os.PathLike[str]"]

class GpuUnavailableError(RuntimeError): ...

def estimate(scenario: Dict[str, Any], accuracy: bool = ..., replay: Optional[_Path] = ...) -> Dict[str, Any]: ...
def fit(
    scenario: Dict[str, Any],
    target_batch: Any = ...,
    users: Any = ...,
    tokens_per_s: Any = ...,
    replay: Optional[_Path] = ...,
) -> Dict[str, Any]: ...
def probe(replay: Optional[_Path] = ...) -> Dict[str, Any]: ...
def keywords() -> List[Tuple[str, str]]: ...

class Monitor:
    """``vramfit watch``'s monitor: each ``sample()`` reads the GPUs once and judges the levels."""

    def __init__(
        self,
        gpus: Optional[List[int]] = ...,
        warn: str = ...,
        critical: str = ...,
        replay: Optional[_Path] = ...,
    ) -> None: ...
    @property
    def gpus(self) -> List[int]: ...
    def sample(self) -> Dict[str, Any]: ...
