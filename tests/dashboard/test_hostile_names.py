"""Nothing from an upload rendered as markup (dashboard/display/markup.py ``plain``): every panel walked
with hostile channel, series and file names; no markdown body the app sends carries a link,
an image or an auto-linkable address that came from the data."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from dash_helpers import long_csv, show, start
from levy_dashboard.display.markup import JOINER, plain
from levy_dashboard.session import state

pytestmark = pytest.mark.integration

CHANNELS = ["![t](http://127.0.0.1:8765/track.png)", "[Log in again](https://phish.example/login)",
            "www.phish.example a@phish.example"]
SERIES = ["[s](http://evil.example/s)", "www.evil.example", "<b>x</b>@evil.example"]
FILE = "www.phish.example [f](https://phish.example) a@phish.example.csv"
# what a markdown renderer would turn into a link, an image or a fetch (GFM autolinks included)
LINKING = re.compile(r"(?<!\\)\]\(|(?<!\\)!\[|www\.|https?://|mailto:|[\w.+-]@[\w-]+\.|<b>")


def hostile_csv() -> bytes:
    df = pd.read_csv(io.BytesIO(long_csv(12)), dtype={"patient_id": str})
    channels = dict(zip(sorted(df["channel"].unique()), CHANNELS, strict=False))
    ids = sorted(df["patient_id"].unique())
    df["channel"] = df["channel"].map(lambda c: channels.get(c, c))
    df["patient_id"] = df["patient_id"].map(lambda s: SERIES[ids.index(s)] if ids.index(s) < len(SERIES) else s)
    return df.to_csv(index=False).encode()


def bodies(at) -> list[str]:
    """Every markdown-rendered body of the page: markdown, captions, alerts, labels and helps."""
    out = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title")
           for e in at.get(kind) if isinstance(getattr(e, "value", None), str)]
    for kind in ("selectbox", "multiselect", "button", "slider", "radio", "checkbox", "text_input", "metric"):
        for e in at.get(kind):
            out += [t for t in (getattr(e.proto, "label", ""), getattr(e.proto, "help", "")) if t]
    return out


def shown(text: str) -> str:
    """What a reader sees of a markdown body: escapes resolved, joiners gone."""
    return re.sub(r"\\(.)", r"\1", text.replace(JOINER, ""))


def test_plain_breaks_every_link_an_upload_could_make() -> None:
    for name in [*CHANNELS, *SERIES, FILE, "http://x.y", "mailto:a@b.c", "<https://a.b>", ":red[x]"]:
        out = plain(name)
        assert not LINKING.search(out), out
        assert shown(out) == name, "reads exactly as written"


def test_every_panel_shows_hostile_names_as_text() -> None:
    at = start()
    at.file_uploader(key="upload").set_value((FILE, hostile_csv(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    seen: list[str] = []
    for panel in state.PANELS:
        show(at, panel)
        for body in bodies(at):
            assert not LINKING.search(body), f"{panel}: {body!r}"
            seen.append(shown(body))
    text = " ".join(seen)
    for name in (CHANNELS[0], CHANNELS[1], FILE):  # they are shown, as text: the test looks at them
        assert name in text, f"{name!r} is shown nowhere"
