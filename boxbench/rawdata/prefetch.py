"""Items of a generator made in a thread of their own, a few ahead of their use: the exporter
fetches the next page of trials while it encodes the last."""

import queue
import threading


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


_END = object()


class Prefetch:
    """Items of `produce()` made in a thread of their own, at most `depth` ahead of use.

    The database driver waits on the network without holding the interpreter, so fetching and
    encoding overlap. `close()` stops the thread and waits for it, so the connection is free
    again when it returns."""

    def __init__(self, produce, depth: int = 2):
        self.queue: queue.Queue = queue.Queue(depth)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(produce,), daemon=True)
        self.thread.start()

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, produce):
        try:
            for item in produce():
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as error:  # noqa: BLE001 - handed to the consuming thread, raised there
            self._put(_Failed(error))

    def __iter__(self):
        while (item := self.queue.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item

    def close(self):
        self.stop.set()
        self.thread.join()
