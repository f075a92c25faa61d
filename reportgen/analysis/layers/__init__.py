"""The layer view of a bmodel capture: commands mapped onto the compiler's layers
(spec ``layer-info.md``; docs/metrics.md "Layers")."""
