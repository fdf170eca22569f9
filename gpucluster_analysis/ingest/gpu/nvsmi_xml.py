"""nvidia-smi `-q -x` XML snapshots (`nvsmi_xml`): one or several concatenated documents (DTD
v10-v12 tag renames, MIG devices), each GPU's readings staged as the CSV log's are."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu.nvsmi import SAMPLE_KIND
from gpucluster_analysis.ingest.gpu.nvsmi_layout import REASON_ALIASES
from gpucluster_analysis.ingest.gpu.telemetry import (
    EVENT_COLUMNS,
    RAW_COLUMNS,
    Batches,
    host_of,
    site_zone,
    start_time,
    store_staged,
)
from gpucluster_analysis.ingest.lines import read_lines
from gpucluster_analysis.ingest.memory import bounded_memory
from gpucluster_analysis.timezones import local_zone

# Tag paths under <gpu>, newest name first (v12 renamed power_readings and clocks_throttle_reasons).
XML_PATHS: dict[str, tuple[str, ...]] = {
    "util_text": ("utilization/gpu_util",),
    "mem_util_text": ("utilization/memory_util",),
    "mem_used_text": ("fb_memory_usage/used",),
    "mem_total_text": ("fb_memory_usage/total",),
    "power_text": (
        "gpu_power_readings/power_draw",
        "gpu_power_readings/instant_power_draw",
        "power_readings/power_draw",
        "gpu_power_readings/average_power_draw",
    ),
    "temp_text": ("temperature/gpu_temp",),
    "sm_clock_text": ("clocks/sm_clock",),
    "model": ("product_name",),
    "uuid": ("uuid",),
}
_REASON_TAG = re.compile(r"clocks_(?:throttle|event)_reason_(\w+)")
_GPU_TAG = re.compile(r"<gpu[\s>]")


def _xml_documents(ctx: LoadContext) -> Iterator[tuple[int, str]]:
    """(first line, text) of each <nvidia_smi_log> document; one at a time, so memory stays bounded."""
    parts: list[str] = []
    start = None
    for number, line, _ in read_lines(ctx.path):
        if "<nvidia_smi_log" in line and start is None:
            start = number
            parts = [line[line.index("<nvidia_smi_log") :]]
        elif start is not None:
            parts.append(line)
        if start is not None and "</nvidia_smi_log>" in line:
            text = "\n".join(parts)
            yield start, text[: text.rindex("</nvidia_smi_log>") + len("</nvidia_smi_log>")]
            start, parts = None, []
    if start is not None:
        yield start, ""  # cut off: reported by the caller


def _text(element: ET.Element, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        found = element.find(path)
        if found is not None and found.text is not None and found.text.strip():
            value = found.text.strip()
            if value.upper() != "N/A" or path == paths[-1]:
                return value
    return None


def _ctime(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None


def load_xml(ctx: LoadContext) -> LoadCounts:
    host = host_of(ctx)
    zone = site_zone(ctx)
    raw = Batches(ctx.con, "stage_raw", RAW_COLUMNS)
    events = Batches(ctx.con, "stage_gpu_events", EVENT_COLUMNS)
    fallback = start_time(ctx)
    documents = 0
    for line, text in _xml_documents(ctx):
        documents += 1
        if not text:
            raw.add(
                line=line, text="<nvidia_smi_log>", machine_id=host, problem="snapshot cut off before </nvidia_smi_log>"
            )
            continue
        try:
            root = ET.fromstring(text)
        except ET.ParseError as e:
            raw.add(
                line=line + e.position[0] - 1,
                text=text.splitlines()[e.position[0] - 1][:500] if text else "",
                machine_id=host,
                problem=f"unreadable XML snapshot: {e}",
            )
            continue
        stamp = root.findtext("timestamp")
        local_at = _ctime(stamp)
        utc_at = fallback if local_at is None and not stamp else None
        gpus = root.findall("gpu")
        attached = root.findtext("attached_gpus")
        # <gpu> elements come in nvidia-smi's index order; with fewer than attached_gpus
        # (nvidia-smi -i N) the position is not the index: then UUID or PCI id must tell.
        whole = attached is not None and attached.strip().isdigit() and int(attached) == len(gpus)
        # each <gpu> element's own line, for its reject (ElementTree keeps no line numbers)
        gpu_lines = [line + text.count("\n", 0, m.start()) for m in _GPU_TAG.finditer(text)]
        for position, gpu in enumerate(gpus):
            values = {column: _text(gpu, paths) for column, paths in XML_PATHS.items()}
            reasons = gpu.find("clocks_event_reasons")
            if reasons is None:
                reasons = gpu.find("clocks_throttle_reasons")
            throttle = None
            if reasons is not None and len(reasons):
                active = [
                    REASON_ALIASES.get(m.group(1), m.group(1))
                    for child in reasons
                    if (m := _REASON_TAG.fullmatch(child.tag)) and (child.text or "").strip() == "Active"
                ]
                known = [
                    child
                    for child in reasons
                    if _REASON_TAG.fullmatch(child.tag) and (child.text or "").strip() in ("Active", "Not Active")
                ]
                throttle = ",".join(active) if active else ("none" if known else None)
            gpu_line = gpu_lines[position] if len(gpu_lines) == len(gpus) else line
            common = {
                "line": gpu_line,
                "text": f'<gpu id="{gpu.get("id", "")}">',
                "machine_id": host,
                "local_at": local_at,
                "utc_at": utc_at,
                "time_text": stamp,
                "index_text": str(position) if whole else None,
                "pci_text": gpu.get("id"),
            }
            raw.add(**common, **values, throttle_text=throttle)
            for mig in gpu.findall("mig_devices/mig_device"):
                raw.add(
                    **common,
                    instance_text=mig.findtext("gpu_instance_id"),
                    uuid=values["uuid"],
                    model=values["model"],
                    mem_used_text=_text(mig, ("fb_memory_usage/used",)),
                    mem_total_text=_text(mig, ("fb_memory_usage/total",)),
                )
        if not gpus:
            message = " ".join(t.strip() for t in root.itertext() if t.strip())[:500] or "snapshot lists no GPU"
            events.add(line=line, event_at=None, machine_id=host, kind="tool_error", detail=message)
    raw.flush()
    events.flush()
    if not documents and ctx.head.lstrip().startswith(_QUERY_TEXT):
        raise ParseError(
            f"{ctx.path}: nvidia-smi -q text: gca reads the same report as XML",
            hint="log it with nvidia-smi -q -x (or --query-gpu ... --format=csv)",
        )
    if not documents:
        raise ParseError(f"{ctx.path}: no <nvidia_smi_log> document", hint="expected the output of nvidia-smi -q -x")
    ctx.con.execute(
        "UPDATE stage_raw SET problem = 'snapshot without a <timestamp>: pass --time' "
        "WHERE problem IS NULL AND local_at IS NULL AND utc_at IS NULL AND time_text IS NULL"
    )
    return store_staged(ctx, zone)


_QUERY_TEXT = "==============NVSMI LOG=============="


def sniff_xml(head: str) -> bool:
    # nvidia-smi -q in its text form is claimed too, to be refused with the command that helps
    return "<nvidia_smi_log" in head or head.lstrip().startswith(_QUERY_TEXT)


FORMATS = [
    FileFormat(
        name="nvsmi_xml",
        source="nvidia-smi",
        description="nvidia-smi -q -x XML snapshots (one or several concatenated)",
        file_names=(),
        sniff=sniff_xml,
        load=bounded_memory(load_xml),
        default_zone=local_zone(),
        sample_kind=SAMPLE_KIND,
    ),
]
