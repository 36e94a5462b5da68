"""Format 6: written by Flink 2.1 - 2.3 (``MetadataV6Serializer``).

New in this version: channel-state handles are tagged (``ChannelStateHandleSerializerV2``): a
plain input channel or result subpartition handle as in format 3, or a merged one (the
handles of one subtask sharing one delegate, with serialized channel offsets, the delegate
allowed to be null).
"""

from __future__ import annotations

from udfs.savepoint.format_v5 import FormatV5
from udfs.savepoint.handles import channel_handle_name, describe
from udfs.savepoint.metadata_model import Handle

INPUT_CHANNEL_STATE_HANDLE = 1
RESULT_SUBPARTITION_STATE_HANDLE = 2
MERGED_INPUT_CHANNEL_STATE_HANDLE = 3
MERGED_RESULT_SUBPARTITION_STATE_HANDLE = 4

CHANNEL_TAG_NAMES = {
    INPUT_CHANNEL_STATE_HANDLE: "INPUT_CHANNEL_STATE_HANDLE",
    RESULT_SUBPARTITION_STATE_HANDLE: "RESULT_SUBPARTITION_STATE_HANDLE",
    MERGED_INPUT_CHANNEL_STATE_HANDLE: "MERGED_INPUT_CHANNEL_STATE_HANDLE",
    MERGED_RESULT_SUBPARTITION_STATE_HANDLE: "MERGED_RESULT_SUBPARTITION_STATE_HANDLE",
}


class FormatV6(FormatV5):
    VERSION = 6

    def channel_handle(self, is_input: bool) -> Handle | None:
        r = self.r
        plain = INPUT_CHANNEL_STATE_HANDLE if is_input else RESULT_SUBPARTITION_STATE_HANDLE
        merged = MERGED_INPUT_CHANNEL_STATE_HANDLE if is_input else MERGED_RESULT_SUBPARTITION_STATE_HANDLE
        unknown = f"Unknown {'input' if is_input else 'output'} state handle type: "
        if self.handles.tag("channel", r.u8, (plain, merged), unknown, names=CHANNEL_TAG_NAMES) == plain:
            return super().channel_handle(is_input)
        r.i32("subtask index")
        size = r.i64("channel state size")
        delegate = self.handles.stream_handle(1)
        r.skip(r.count("serialized channel offsets length"), "serialized channel offsets")
        return Handle(f"Merged{channel_handle_name(is_input)}({describe(delegate)})", size)
