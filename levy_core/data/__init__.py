"""Reading irregularly sampled, multichannel time series from CSV.

The data layer turns a user's CSV (or a `pandas.DataFrame`) into
[`Observations`][levy_core.data.Observations]: one long table with exactly the columns ``series_id`` (str),
``channel`` (str), ``time`` (float64, hours) and ``value`` (float64), sorted by
``(series_id, time, channel)``.

Two layouts are understood:

* **long** -- one observation per row: ``series_id`` (optional), ``time``, ``channel``
  (optional), ``value``;
* **wide** -- one row per time stamp: a time column, an optional series column, and one
  numeric column per channel; blank cells are unobserved.

Column names are matched case-insensitively against common aliases (see
`TIME_ALIASES` and friends); [`detect_mapping`][levy_core.data.detect_mapping] shows what was found and a
[`ColumnMapping`][levy_core.data.ColumnMapping] passed explicitly overrides it.

Time
----
* Numbers are taken as **hours** unless ``time_unit`` says otherwise ("minutes",
  "seconds", "days" are converted to hours); nothing is rescaled or shifted.
* Elapsed clock times ``HH:MM`` or ``HH:MM:SS`` (e.g. PhysioNet's raw "47:30") are read
  as hours since zero.
* Date-times (ISO 8601 with or without a time-zone offset, mixed precision, mixed
  offsets; anything else `pandas.to_datetime` understands) are converted to UTC
  (times without an offset are taken as UTC) and then to hours since each series' first
  observation; the first observation of each series is kept in
  `LoadReport.time_origin`.

Every user mistake raises [`DataError`][levy_core.data.DataError] (a `ValueError`) whose message names
the column, the first offending CSV lines (header = line 1, as a spreadsheet shows them)
and what to do. Blank values are not mistakes: they are dropped and counted in the
[`LoadReport`][levy_core.data.LoadReport], as are exact duplicates of ``(series, channel, time)``, which are
averaged. A column that the header names twice is refused when the mapping uses it.

Separators and decimal marks
----------------------------
Comma, semicolon and tab separated files are read (the header line decides). In a
semicolon or tab separated file, numbers written with decimal commas (``0,5;1,25``, the
CSV a spreadsheet writes where the decimal mark is a comma) are read as 0.5 and 1.25;
a file that mixes decimal commas with decimal points is refused ("decimal commas and
decimal points mixed"), and so are decimal commas in a comma-separated file, never
read as anything else (see `levy_core.data.decimals`).

Limits
------
Hostile or mistaken input costs bounded time and memory and gets a message:

* gzip is unpacked as a stream and refused past [`MAX_DECOMPRESSED_BYTES`][levy_core.data.MAX_DECOMPRESSED_BYTES] (200 MB);
* before parsing: at most [`MAX_COLUMNS`][levy_core.data.MAX_COLUMNS] header fields, lines of at most
  [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS] characters and [`MAX_CELLS`][levy_core.data.MAX_CELLS] cells (rows × fields);
* at most [`MAX_ROWS`][levy_core.data.MAX_ROWS] observations: rows of a long table, rows × channel columns
  of a wide one;
* values within ``±``[`MAX_ABS_VALUE`][levy_core.data.MAX_ABS_VALUE] (3.4e38, float32's range; their squares, summed over every
  observation, stay finite), and times that the model's 32-bit arithmetic can resolve
  at the series' spacing (see `levy_core.data.ranges`).

The user's own clock
--------------------
`LoadReport.input_time_unit` keeps the input's unit ("hours", "minutes", "seconds",
"days", or "datetime") and `LoadReport.input_has_offsets` whether date-times carried
time-zone offsets. `levy_core.data.durations` reads durations (`parse_duration`:
"36h", "2 weeks", or a bare number in the data's unit) into hours and says them back in
the user's clock (`say_duration`, `say_time`: "730 days", "6.9 months");
`levy_core.data.clock` reads query tables (`read_queries`: date-times, or
numbers in the data's unit) into hours, and writes hours back in the user's clock
(`to_user_time`, `user_time_label`); `levy_core.data.calendar` finds the
calendar of date-time data (`infer_freq`: weekly on a weekday, month starts, business
days, …) and the forecast times on it (`calendar_steps`).

[`preview_table`][levy_core.data.preview_table] reads the first rows of an upload through the same decoding, with
the cells left as text, for choosing a column mapping before the data are read.

The package's modules, in the order the data pass through them: ``decode`` (bytes to
text), ``reading`` (text to a table; the samples), ``decimals`` (decimal commas),
``columns`` (the mapping), ``cells`` and ``times`` (parsing cells), ``frame``
(`from_frame`), ``ranges`` (values and times too large), ``observations`` (the
result), ``durations``, ``clock`` and ``calendar`` (the user's clock, both ways); ``messages`` and ``errors`` serve
them all. `ChannelScaler` lives in `levy_core.episodes.scaling` and is re-exported
here for existing imports.
"""

from __future__ import annotations

from levy_core.data.calendar import calendar_steps, freq_step_hours, infer_freq
from levy_core.data.clock import (
    DATETIME,
    MAX_DATETIME_HOURS,
    read_queries,
    to_user_time,
    user_time_label,
    user_time_unit,
)
from levy_core.data.columns import (
    CHANNEL_ALIASES,
    SERIES_ALIASES,
    TIME_ALIASES,
    VALUE_ALIASES,
    ColumnMapping,
    ColumnNames,
    detect_mapping,
)
from levy_core.data.decode import MAX_DECOMPRESSED_BYTES
from levy_core.data.durations import (
    DAYS_PER_YEAR,
    DURATION_UNITS,
    calendar_duration,
    display_unit,
    duration_text,
    parse_duration,
    say_duration,
    say_time,
)
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, SINGLE_CHANNEL, SINGLE_SERIES, from_frame
from levy_core.data.observations import COLUMNS, LoadReport, Observations
from levy_core.data.ranges import MAX_ABS_VALUE
from levy_core.data.reading import (
    MAX_CELLS,
    MAX_COLUMNS,
    MAX_LINE_CHARS,
    SAMPLE_DIR,
    SAMPLES,
    load_sample,
    preview_table,
    read_csv,
)
from levy_core.data.recorded import RecordedReading
from levy_core.data.times import TIME_UNITS

__all__ = [
    "CHANNEL_ALIASES",
    "COLUMNS",
    "DATETIME",
    "DAYS_PER_YEAR",
    "DURATION_UNITS",
    "MAX_ABS_VALUE",
    "MAX_CELLS",
    "MAX_COLUMNS",
    "MAX_DATETIME_HOURS",
    "MAX_DECOMPRESSED_BYTES",
    "MAX_LINE_CHARS",
    "MAX_ROWS",
    "SAMPLES",
    "SAMPLE_DIR",
    "SERIES_ALIASES",
    "SINGLE_CHANNEL",
    "SINGLE_SERIES",
    "TIME_ALIASES",
    "TIME_UNITS",
    "VALUE_ALIASES",
    "calendar_duration",
    "calendar_steps",
    "display_unit",
    "freq_step_hours",
    "infer_freq",
    "say_duration",
    "say_time",
    "ColumnMapping",
    "ColumnNames",
    "DataError",
    "LoadReport",
    "Observations",
    "RecordedReading",
    "detect_mapping",
    "from_frame",
    "load_sample",
    "duration_text",
    "parse_duration",
    "preview_table",
    "read_csv",
    "read_queries",
    "to_user_time",
    "user_time_label",
    "user_time_unit",
]
