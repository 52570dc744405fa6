"""The host link of a device: the rate a pinned host-to-device or device-to-host copy reaches.

A copy between pinned host memory and the device is one DMA over the device's host link
(PCIe x16, or NVLink-C2C on Grace-Hopper/Blackwell superchips), at about the link's rate. The
rate used is :data:`LINK_EFFICIENCY` (80 %) of the link's nominal rate per direction: PCIe
packet headers and flow control take about a fifth (pinned ``bandwidthTest`` copies reach
~12-13 GB/s on Gen3 x16, ~25 on Gen4, ~50 on Gen5). The generation is read off the device
name (the card's datasheet: every part of a family has the same host interface), by pattern,
so suffixes (``VF``, ``SXM``/``PCIe``, memory sizes) do not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GEN3", "LINK_EFFICIENCY", "HostLink", "host_link"]

#: The share of a link's nominal per-direction rate that a pinned copy reaches.
LINK_EFFICIENCY = 0.8


@dataclass(frozen=True)
class HostLink:
    """A device's host link: its name and the rate (GB/s, 10^9 bytes/s) a pinned copy reaches."""

    name: str
    nominal_gbps: float

    @property
    def pinned_gbps(self) -> float:
        return LINK_EFFICIENCY * self.nominal_gbps


#: PCIe x16, nominal rate per direction (after line coding): 15.75, 31.5, 63 GB/s.
GEN3 = HostLink("PCIe Gen3 x16", 15.75)
_GEN4 = HostLink("PCIe Gen4 x16", 31.5)
_GEN5 = HostLink("PCIe Gen5 x16", 63.0)
#: NVLink-C2C between a Grace CPU and its GPU: 900 GB/s both ways, 450 each.
_C2C = HostLink("NVLink-C2C", 450.0)

#: (name pattern, link), the first match wins (superchips before their GPU's name).
_LINKS: tuple[tuple[re.Pattern[str], HostLink], ...] = (
    (re.compile(r"\bG[HB]\d{3}\b", re.IGNORECASE), _C2C),
    (re.compile(r"\b(?:H100|H200|H800|H20|B100|B200|B300|RTX 50\d0|RTX PRO 6000)\b", re.IGNORECASE), _GEN5),
    (re.compile(r"\bMI3\d\dX?\b", re.IGNORECASE), _GEN5),
    (re.compile(r"\b(?:A100|A800|A10G?|A30|A40|A16|L4|L40S?|RTX 30\d0|RTX 40\d0|RTX A\d000)\b", re.IGNORECASE), _GEN4),
    (re.compile(r"\bMI(?:100|2\d0X?)\b", re.IGNORECASE), _GEN4),
    (re.compile(r"\b(?:V100|T4|P100|P40|P4|RTX 20\d0|Quadro RTX)\b", re.IGNORECASE), GEN3),
)


def host_link(device_name: str | None) -> HostLink | None:
    """The host link of a device by its ``deviceProperties`` name (None if the name is unknown)."""
    if not device_name:
        return None
    for pattern, link in _LINKS:
        if pattern.search(device_name):
            return link
    return None
