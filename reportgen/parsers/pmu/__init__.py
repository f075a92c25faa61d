"""TPU PMU dump decoder (AKS / AKSV): ``load_dump(path) -> Profile``, in two stages:
``read_dump`` (bytes -> arrays) and ``build_profile`` (binding -> command model)."""
from reportgen.parsers.pmu.dump import build_profile, load_dump, read_dump

__all__ = ["build_profile", "load_dump", "read_dump"]
