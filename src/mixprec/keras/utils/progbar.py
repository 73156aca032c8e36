"""Progbar: tf-keras' text progress bar, character for character.

``6/6 [==============================] - 0s 54ms/step - loss: 0.7149 - accuracy: 0.7891``.
Dynamic display (redraw in place with backspaces and ``\\r``) when stdout is a terminal,
inside Jupyter, or on POSIX systems, exactly as tf-keras decides; otherwise one line per
update. Updates are throttled to one per ``interval`` seconds; the final one always prints.
"""

import math
import os
import sys
import time

__all__ = ["Progbar"]



def _write(text):
    """stdout, or Python logging when keras.utils.disable_interactive_logging() was called
    (tf-keras' io_utils.print_msg)."""
    from mixprec.keras.utils import data_prep

    if data_prep.is_interactive_logging_enabled():
        sys.stdout.write(text)
    elif text.strip("\b\r\n"):
        import logging

        logging.getLogger("mixprec").info(text.strip("\b\r\n"))

def _dynamic_display():
    return ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
            or "ipykernel" in sys.modules or "posix" in sys.modules
            or "PYCHARM_HOSTED" in os.environ)


class Progbar:
    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._dynamic_display = _dynamic_display()
        self._total_width = 0
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_at_epoch_start = self._start
        self._time_at_epoch_end = None
        self._time_after_first_step = None

    def _fmt_value(self, k, signed=False):
        # tf-keras 2.21 tests |v| > 1e-3 on the bar, but v > 1e-3 on verbose=2's line (signed):
        # a negative value prints %.4e there
        v = self._values[k]
        if isinstance(v, list):
            avg = v[0] / max(1, v[1])
        else:
            avg = v
        if isinstance(avg, str):
            return " %s" % avg
        return " %.4f" % avg if (avg if signed else abs(avg)) > 1e-3 else " %.4e" % avg

    @staticmethod
    def _format_time(time_per_unit, unit_name):
        if time_per_unit >= 1 or time_per_unit == 0:
            return " %.0fs/%s" % (time_per_unit, unit_name)
        if time_per_unit >= 1e-3:
            return " %.0fms/%s" % (time_per_unit * 1e3, unit_name)
        return " %.0fus/%s" % (time_per_unit * 1e6, unit_name)

    def _estimate_step_duration(self, current, now):
        if current:
            # the first step (warm-up) is excluded once a second one has run
            if self._time_after_first_step is not None and current > 1:
                return (now - self._time_after_first_step) / (current - 1)
            return (now - self._start) / current
        return 0

    def update(self, current, values=None, finalize=None):
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        values = values or []
        for k, v in values:
            if k not in self._values_order:
                self._values_order.append(k)
            if k not in self.stateful_metrics:
                base = max(current - self._seen_so_far, 1)
                if k not in self._values:
                    self._values[k] = [v * base, base]
                else:
                    self._values[k][0] += v * base
                    self._values[k][1] += base
            else:
                self._values[k] = v
        self._seen_so_far = current
        now = time.time()
        if current == 1 and self._time_after_first_step is None:
            self._time_after_first_step = now
        info = " - %.0fs" % (now - self._start)
        if finalize:
            self._time_at_epoch_end = now

        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            prev_total_width = self._total_width
            if self._dynamic_display:
                _write("\b" * prev_total_width)
                _write("\r")
            else:
                _write("\n")
            if self.target is not None:
                numdigits = int(math.log10(self.target)) + 1 if self.target > 0 else 1
                bar = ("%" + str(numdigits) + "d/%d [") % (current, self.target)
                prog = float(current) / self.target if self.target else 1.0
                prog_width = int(self.width * prog)
                if prog_width > 0:
                    bar += "=" * (prog_width - 1)
                    bar += ">" if current < self.target else "="
                bar += "." * (self.width - prog_width)
                bar += "]"
            else:
                bar = "%7d/Unknown" % current
            self._total_width = len(bar)
            _write(bar)
            time_per_unit = self._estimate_step_duration(current, now)
            if self.target is None or finalize:
                info += self._format_time(time_per_unit, self.unit_name)
            else:
                eta = time_per_unit * (self.target - current)
                if eta > 3600:
                    eta_format = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
                elif eta > 60:
                    eta_format = "%d:%02d" % (eta // 60, eta % 60)
                else:
                    eta_format = "%ds" % eta
                info = " - ETA: %s" % eta_format
            for k in self._values_order:
                info += " - %s:%s" % (k, self._fmt_value(k))
            self._total_width += len(info)
            if prev_total_width > self._total_width:
                info += " " * (prev_total_width - self._total_width)
            if finalize:
                info += "\n"
            _write(info)
            sys.stdout.flush()
        elif self.verbose == 2:
            if finalize:
                numdigits = int(math.log10(self.target)) + 1 if self.target else 1
                count = ("%" + str(numdigits) + "d/%d") % (current, self.target)
                info = count + info
                for k in self._values_order:
                    info += " - %s:%s" % (k, self._fmt_value(k, signed=True))
                if self._time_at_epoch_end:  # tf-keras 2.21: fit, evaluate and predict alike
                    time_per_epoch = self._time_at_epoch_end - self._time_at_epoch_start
                    avg = time_per_epoch / max(self.target, 1)
                    self._time_at_epoch_start = now
                    info += " -" + self._format_time(time_per_epoch, "epoch")
                    info += " -" + self._format_time(avg, self.unit_name)
                info += "\n"
                _write(info)
                sys.stdout.flush()
        self._last_update = now

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)
