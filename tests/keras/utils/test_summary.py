"""Model.summary's table layout (src/mixprec/keras/utils/summary.py)."""

import pytest

from mixprec import keras


@pytest.mark.parametrize("kw", [dict(line_length=5), dict(line_length=1),
                                dict(positions=[30, 30, 60, 90]), dict(positions=[40, 20, 10, 5])])
def test_cramped_or_overlapping_columns_still_end(kw):
    # a column of width <= 0 consumed nothing, and the wrapping loop printed blank lines forever
    m = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    lines = []

    def pf(line):
        lines.append(line)
        assert len(lines) < 2000, "summary() does not end"

    m.summary(print_fn=pf, **kw)
    assert any("Total params" in line for line in lines)
