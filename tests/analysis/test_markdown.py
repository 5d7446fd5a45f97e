"""analysis/markdown.py: numbers as a reader takes them (issue 22 point 9): counts are integers,
even in a column that has empty cells (pandas keeps those as floats, which printed 0.000)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import markdown


def test_counts_print_as_integers_and_measurements_keep_their_digits() -> None:
    frame = pd.DataFrame({"profile": ["baseline", "aes128gcm"],
                          "handshake_packets": [np.nan, 0.0], "handshake_frame_bytes": [np.nan, 1715.0],
                          "n_boots": [3.0, 5.0], "added_bytes_udp_encap": [64.0, np.nan],
                          "mean": [1.0, 0.25], "overhead_ci": [np.nan, 0.0123]})
    lines = markdown.table(frame).splitlines()
    assert lines[2] == "| baseline |  |  | 3 | 64 | 1.000 |  |"
    assert lines[3] == "| aes128gcm | 0 | 1715 | 5 |  | 0.250 | 0.012 |"


def test_a_count_column_with_a_fraction_is_left_as_it_is() -> None:
    # a mean of counts (packets per attach) is a measurement: its decimals stay
    frame = pd.DataFrame({"packets_mean": [10.5], "n_samples": [4.0]})
    assert markdown.table(frame).splitlines()[2] == "| 10.500 | 4 |"


def test_count_columns_become_integers_for_the_csv() -> None:
    frame = pd.DataFrame({"handshake_packets": [np.nan, 0.0], "mean": [1.0, 2.0], "packets_mean": [1.0, 2.5]})
    out = markdown.integer_counts(frame)
    assert out.to_csv(index=False).splitlines() == ["handshake_packets,mean,packets_mean", ",1.0,1.0", "0,2.0,2.5"]
