"""The Flink release that reads a ``_metadata`` file, as far as reading the file depends on it.

A restore is read by the new job's release, and a reader is not the newest one in three ways,
all data here: the newest format version it reads (``NEWEST_FORMAT_READ``), the handle tags
it knows (``TAG_SINCE``: a newer tag fails as an unknown one) and, for two releases, a layout
that differs under the same format version and tag (``RELEASE_HANDLES``): Flink 1.11 reads
channel-state handles without the subtask index of 1.12+, and Flink 1.14 reads changelog
handles (tags 8, 9, 10) without the fields 1.15+ read under the same tags. Without a release
the newest reader is modelled (which, like Flink 1.15+, cannot read the 1.14 layout).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from udfs.savepoint.handles import KEYED_TAGS, OPERATOR_TAGS, STREAM_TAGS, HandleReader
from udfs.savepoint.metadata_model import MetadataReader

# The release line whose reader first knew each tag, and the newest format each line reads
# (MetadataSerializers / SavepointSerializers of that line). Used when the reading release is given.
TAG_SINCE = {
    **dict.fromkeys((0, 1, 2, 4, 5), (1, 3)),
    6: (1, 11),
    7: (1, 13),
    **dict.fromkeys((8, 9, 10), (1, 14)),
    **dict.fromkeys((11, 12), (1, 15)),
    **dict.fromkeys((13, 14), (1, 16)),
    **dict.fromkeys((15, 16, 17), (1, 20)),
}
STREAM_TAG_KEY_GROUPS_SINCE = (1, 11)  # a KeyGroupsStateHandle in a stream-handle position (tag 3)
NEWEST_FORMAT_READ = [((2, 1), 6), ((2, 0), 5), ((1, 16), 4), ((1, 11), 3), ((1, 3), 2)]


class Flink111Handles(HandleReader):
    """Flink 1.11's channel-state handles: no subtask index before the channel info."""

    def channel_subtask_index(self) -> None:
        return None


class Flink114Handles(HandleReader):
    """Flink 1.14's changelog handles (tags 8, 9, 10): none of the fields 1.15 added to them
    (checkpointed size, materialization id, state handle id)."""

    def _absent(self, tag: int = 0) -> None:
        return None

    changelog_backend_head = changelog_backend_tail = byte_increment_tail = file_increment_tail = _absent


RELEASE_HANDLES: dict[tuple[int, int], type[HandleReader]] = {(1, 11): Flink111Handles, (1, 14): Flink114Handles}


@dataclass(frozen=True)
class ReadingRelease:
    """What the reading release changes: ``name`` as given (for messages), the newest format it
    reads (None: every format), the tags each handle position accepts and its handle layouts."""

    name: str
    newest_format: int | None
    stream_tags: frozenset[int]
    keyed_tags: frozenset[int]
    operator_tags: frozenset[int]
    handles: type[HandleReader]

    def handle_reader(self, r: MetadataReader) -> HandleReader:
        return self.handles(r, self.stream_tags, self.keyed_tags, self.operator_tags)


def reading_release(flink_line: str | None) -> ReadingRelease:
    """The reader of release ``flink_line`` ('1.14.6', '2.0', ...; None or no 'major.minor':
    the newest reader)."""
    m = re.match(r"\s*(\d+)\.(\d+)", flink_line or "")
    if m is None:
        return ReadingRelease(flink_line or "", None, STREAM_TAGS, KEYED_TAGS, OPERATOR_TAGS, HandleReader)
    line = (int(m.group(1)), int(m.group(2)))

    def known(tags: frozenset[int]) -> frozenset[int]:
        return frozenset(t for t in tags if TAG_SINCE.get(t, (0, 0)) <= line or t == 3)

    return ReadingRelease(
        name=flink_line or "",
        newest_format=next((v for since, v in NEWEST_FORMAT_READ if line >= since), None),
        stream_tags=known(STREAM_TAGS) - ({3} if line < STREAM_TAG_KEY_GROUPS_SINCE else set()),
        keyed_tags=known(KEYED_TAGS),
        operator_tags=known(OPERATOR_TAGS),
        handles=RELEASE_HANDLES.get(line, HandleReader),
    )
