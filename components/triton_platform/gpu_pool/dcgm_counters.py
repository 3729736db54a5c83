"""The counters file the GPU pool's DCGM exporter loads: NVIDIA's default set plus what the GPU health rules read.

`dcgm_exporter_default_counters.csv` is NVIDIA/dcgm-exporter's `etc/default-counters.csv` at release 4.6.0-4.8.3
(commit 7ad58324b4447b64dc3dedf946b889b648b7f476), verbatim: the file the pinned image loads when no
`--collectors` is given (pkg/cmd/app.go, `appconfig.DefaultCollectorsFile`). Three rows the rules need are
commented out there; the platform's file is the same text with those three uncommented, so every other series
stays what users of the default expect.
"""

from __future__ import annotations

from importlib.resources import files

EXPORTER_DEFAULTS = "dcgm_exporter_default_counters.csv"
HEALTH_COUNTERS = ("DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_EXP_CLOCK_EVENTS_COUNT")
"""Off in NVIDIA's defaults, read by monitoring/gpu_health_rules.py: XIDs per code and clock events per reason
within the exporter's window (5 minutes by default: `--xid-count-window-size`, `--clock-events-count-window-size`;
internal/pkg/collector/xid_collector.go, clock_events_collector.go), and double-bit ECC errors since the driver
loaded."""
COUNTERS_FILE = "counters.csv"
"""Its key in the exporter's ConfigMap, and its name where the ConfigMap is mounted."""


def exporter_defaults() -> str:
    """NVIDIA's default counters file, as the image ships it."""
    return files("triton_platform.gpu_pool").joinpath(EXPORTER_DEFAULTS).read_text()


def enabled_counters(text: str) -> list[str]:
    """The DCGM field (or exporter metric) names a counters file turns on: its rows that are not comments
    (the exporter reads it with Go's csv reader, `#` marking comments: internal/pkg/counters/counter_config.go)."""
    rows = (line.strip() for line in text.splitlines())
    return [row.split(",", 1)[0].strip() for row in rows if row and not row.startswith("#")]


def counters_csv() -> str:
    """NVIDIA's defaults with HEALTH_COUNTERS turned on."""
    lines = exporter_defaults().splitlines(keepends=True)
    out = []
    for line in lines:
        name = line.lstrip("# ").split(",", 1)[0].strip()
        out.append(line.lstrip("# ") if line.startswith("#") and name in HEALTH_COUNTERS else line)
    return "".join(out)
