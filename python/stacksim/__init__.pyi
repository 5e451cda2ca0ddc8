from typing import Any, Dict, Iterable, List, Optional, overload

import pandas

class ScenarioError(ValueError): ...

class Result:
    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    goodput_tokens_per_s: float
    checkpoint_s: float
    failure_loss_fraction: float
    tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    memory_per_gpu_bytes: float
    oom: bool
    breakdown: Dict[str, float]
    bottleneck: str
    host_launches_per_step: float
    cuda_graphs: str
    def __init__(self, data: Dict[str, Any]) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def breakdown_frame(self) -> pandas.DataFrame: ...

class Scenario:
    def __init__(self, data: Optional[Dict[str, Any]] = ..., origin: str = ..., base_dir: str = ..., **sections: Any) -> None: ...
    @classmethod
    def load(cls, path: str) -> Scenario: ...
    def set(self, key: str, value: Any) -> Scenario: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def run(self, trace: Optional[str] = ...) -> Result: ...

def run(path_or_dict: Any, **overrides: Any) -> Result: ...
def validate(cases_path: str, kinds: Iterable[str] = ..., sources: Iterable[str] = ...,
             ids: Iterable[str] = ...) -> Dict[str, Any]: ...
def models() -> List[Dict[str, Any]]: ...
class SweepInterrupted(KeyboardInterrupt):
    signum: int
    written: int
    points: int
    path: str

class SweepSummary:
    path: str
    points: int
    written: int
    simulated: int
    resumed: int
    invalid: int

@overload
def sweep(base: Scenario, grid: Dict[str, Iterable[Any]], threads: Optional[int] = ..., client: Any = ...,
          output: None = ...) -> pandas.DataFrame: ...
@overload
def sweep(base: Scenario, grid: Dict[str, Iterable[Any]], threads: Optional[int] = ..., client: Any = ...,
          *, output: str) -> SweepSummary: ...
def best_plans(base: Scenario, top: int = ..., max_tp: int = ..., micro_batches: Iterable[int] = ...,
               recompute: Iterable[str] = ..., zero: Iterable[int] = ..., threads: Optional[int] = ...,
               client: Any = ...) -> pandas.DataFrame: ...
def plan(scenario: Any, k: int = ..., **overrides: Any) -> Any: ...
def compare(base: Scenario, variants: Iterable[Dict[str, Any]], elasticity: bool = ...) -> Dict[str, Any]: ...
def purchase(scenario_path: str, purchase_path: str = ..., **overrides: Any) -> Dict[str, Any]: ...
