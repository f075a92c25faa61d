"""TPU PMU dump decoder (AKS / AKSV): ``load_dump(path) -> Profile``."""
from reportgen.parsers.pmu.dump import load_dump

__all__ = ["load_dump"]
