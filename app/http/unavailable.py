"""Every 503 the api answers a client says why three ways: its message in the body (the client),
one log line per reason per window with a count of the lines held back (the operator), and
`braid_unavailable_total{reason}` (the dashboard and Prometheus).

Readiness's 503 is not one of them: it is a probe's answer about a state, polled every few
seconds while it lasts, and its body already names the side that is down; counting it would
bury the refusals clients got (it is still in `braid_http_responses_total{status="503"}`).
"""

from __future__ import annotations

import logging

from core.enums import UnavailableReason
from core.metrics import UNAVAILABLE, Recorder
from core.throttle import LogThrottle

log = logging.getLogger(__name__)
LOG_WINDOW_S = 10.0
REASON_HEADER = "X-Braid-Reason"


class UnavailableAnswers:
    """What the api records for each 503 it answers (app.state.unavailable)."""

    def __init__(self, recorder: Recorder, throttle: LogThrottle | None = None) -> None:
        self._recorder = recorder
        self._throttle = throttle or LogThrottle(LOG_WINDOW_S)
        for reason in UnavailableReason:  # every series from 0, so a rate sees the first 503
            recorder.inc(UNAVAILABLE, 0, reason=reason.value)

    def answered(self, method: str, path: str, reason: UnavailableReason, message: str) -> None:
        self._recorder.inc(UNAVAILABLE, reason=reason.value)
        held = self._throttle.admit(reason.value)
        if held is None:
            return
        if held:
            log.warning(
                "503 %s to %s %s: %s (%d more %s 503s not logged since the last line)",
                reason.value,
                method,
                path,
                message,
                held,
                reason.value,
            )
        else:
            log.warning("503 %s to %s %s: %s", reason.value, method, path, message)
