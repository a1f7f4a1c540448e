"""Legacy module (smdebug 1.0.x's ``smdebug.core.reader``): ``FileReader`` reads every record of one
event file, with the project's record framing and tensor decoding (``smdebug.core.tfevent``). To read
a run, use ``smdebug.trials.create_trial``: it reads only the records asked for. Not part of the modern
API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from smdebug.core.storage.base import as_path_str
from smdebug.core.storage.factory import storage_for_file
from smdebug.core.tfevent.proto.event_pb2 import Event
from smdebug.core.tfevent.records import iter_records
from smdebug.core.tfevent.tensor_codec import summary_value_mode, tensor_proto_to_numpy
from smdebug.core.utils import match_inc
from smdebug.exceptions import EventFileCorrupted, SMDebugNotImplementedError


class FileReader:
    """The records of an event file (local path or ``s3://``).

    ``check``: ``"minimal"`` or True verifies each record's checksums (the constant footer of files
    written by smdebug 1.0.x is accepted); False skips the verification.
    """

    def __init__(self, fname, wtype: str = "tfevent"):
        if wtype != "tfevent":
            raise SMDebugNotImplementedError("Only tfevent format is supported for now.")
        self.fname = as_path_str(fname)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        pass

    def _events(self, check) -> Iterator[Tuple[int, Event]]:
        """``(offset, event)`` of every record."""
        storage, name = storage_for_file(self.fname)
        data = storage.read(name)
        verify = check not in (False, None, "none", "None")
        for offset, _, payload in iter_records(data, self.fname, verify):
            try:
                yield offset, Event.FromString(bytes(payload))
            except Exception as e:  # noqa: BLE001 - protobuf DecodeError
                raise EventFileCorrupted(f"Record at byte {offset} is not an Event: {e}", self.fname) from None

    def _decode(self, offset: int, ev: Event, value, with_mode: bool):
        """``(value, mode, mode_step)`` of one tensor of a record (modes only ``with_mode``).

        A record whose checksums hold can still carry what no writer puts there (a shape its values do
        not fill, a mode that is not a number); that is the file's damage, reported as the trial reader
        reports it (EventFileCorrupted naming the file), not as an error from inside the decoder."""
        try:
            mode, mode_step = summary_value_mode(value, ev.step) if with_mode else (None, None)
            return tensor_proto_to_numpy(value.tensor), mode, mode_step
        except (MemoryError, RecursionError) as e:
            problem = type(e).__name__
        except Exception as e:  # noqa: BLE001 - bad dtype / shape / metadata
            problem = str(e)
        raise EventFileCorrupted(
            f"Cannot decode tensor {value.tag[:200]!r} (record at byte {offset}): {problem}", self.fname, ev.step)

    def read_tensors(self, check="minimal") -> Iterator[tuple]:
        """Yield ``(name, step, value, mode, mode_step)`` for every tensor record."""
        for offset, ev in self._events(check):
            for value in ev.summary.value:
                if value.WhichOneof("value") != "tensor":
                    continue
                data, mode, mode_step = self._decode(offset, ev, value, with_mode=True)
                yield value.tag, ev.step, data, mode, mode_step

    def read_events(self, check="minimal", regex_list: Optional[List[str]] = None) -> List[dict]:
        """Every summary value as ``{"timestamp", "step", "name", "value"}``, optionally only those whose
        name matches one of ``regex_list`` (anywhere in the name)."""
        out = []
        for offset, ev in self._events(check):
            for value in ev.summary.value:
                if regex_list is not None and not match_inc(value.tag, regex_list):
                    continue
                kind = value.WhichOneof("value")
                if kind == "tensor":
                    data = self._decode(offset, ev, value, with_mode=False)[0]
                elif kind == "simple_value":
                    data = value.simple_value
                else:
                    continue
                out.append({"timestamp": ev.wall_time, "step": ev.step, "name": value.tag, "value": data})
        return out

