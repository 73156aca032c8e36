"""The merge_call rendezvous of one ``strategy.run`` over local replica threads: the
state the eager run (replicas at once) and the traced run (replicas in turns) share —
who has arrived, the slots they hand in, the merge result, and an abort that wakes every
waiter. Bookkeeping only: no tensors, no collectives."""

import threading

# TensorFlow's words (replicas that call merge_call, an all-reduce or apply_gradients a
# different number of times)
MERGE_MISMATCH = ("Some replicas made a different number of replica_context().merge_call() "
                  "calls.")


class Rendezvous:
    """n replicas meeting at merge_call under one condition (``timeout`` seconds a wait)."""

    finished = 0  # replicas whose function returned

    def __init__(self, n, timeout):
        self.n = n
        self.timeout = timeout
        self.cv = threading.Condition()
        self.arrived = 0
        self.gen = 0
        self.slots = [None] * n
        self.result = None
        self.error = None
        self.aborted = None

    def abort(self, why):
        with self.cv:
            if self.aborted is None:
                self.aborted = why
            self.cv.notify_all()
