"""The one ElementTree helper the XML formats (qti.py, moodle.py) share."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def sub_element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    """A child element of `parent`, with its text when given."""
    element = ET.SubElement(parent, tag, attrs)
    if text is not None:
        element.text = text
    return element
