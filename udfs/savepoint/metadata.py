"""Reader of Flink checkpoint / savepoint ``_metadata`` files, in pure Python (no JVM).

The restore check must know, for every saved operator, what Flink itself reads from the file:
its ID, parallelism, max parallelism, whether it holds state (Flink's definition) and the size
its handles declare. Flink writes the file with ``DataOutputStream`` (big-endian) and state
handles carry a one-byte tag but no outer length, so the only honest way to reach operator N+1
is to parse every handle of operator N field by field, exactly as Flink's deserializer does.
Every layout is transcribed from Flink's sources (``Checkpoints``, ``MetadataV2Serializer`` ..
``MetadataV6Serializer``, ``MetadataV2V3SerializerBase``, ``ChannelStateHandleSerializerV1/V2``
and 1.9/1.10's ``SavepointV2Serializer``), release line by release line; see
docs/savepoint-metadata.md for the table of tags and where each came from. An unknown version
or tag stops the parse with :class:`MetadataError` carrying the byte offset, because without
the tag's layout the rest of the file cannot be located (never guess).

This module is the public face and the registry, as Flink's ``Checkpoints`` and
``MetadataSerializers`` are: it reads the magic number and the format version and hands the
rest to the format's reader (:data:`FORMATS`: ``format_v2`` ... ``format_v6``, each extending
the one before; their shared frame is ``format_base``, the state handles ``handles``). The
reading release (``flink_line="1.14.6"``) decides the newest format and the tags it reads and,
for Flink 1.11 and 1.14, handle layouts of their own (``releases``); the default is the newest
reader (which, like Flink 1.15+, cannot read the 1.14 layout).
"""

from __future__ import annotations

from udfs.savepoint.format_base import MASTER_STATE_MAGIC, FormatBase
from udfs.savepoint.format_v2 import FormatV2
from udfs.savepoint.format_v3 import FormatV3
from udfs.savepoint.format_v4 import (
    CHECKPOINT_PROPERTIES_CLASS,
    CHECKPOINT_PROPERTIES_SUID,
    TRAILER_CLASSES,
    TRAILER_ENUMS,
    CheckpointPropertiesWalker,
    FormatV4,
    read_java_serialized_object,
)
from udfs.savepoint.format_v5 import FormatV5
from udfs.savepoint.format_v6 import (
    CHANNEL_TAG_NAMES,
    INPUT_CHANNEL_STATE_HANDLE,
    MERGED_INPUT_CHANNEL_STATE_HANDLE,
    MERGED_RESULT_SUBPARTITION_STATE_HANDLE,
    RESULT_SUBPARTITION_STATE_HANDLE,
    FormatV6,
)
from udfs.savepoint.handles import (
    BYTE_STREAM_STATE_HANDLE,
    CHANGELOG_BYTE_INCREMENT_HANDLE,
    CHANGELOG_DELTA_TAGS,
    CHANGELOG_FILE_INCREMENT_HANDLE,
    CHANGELOG_FILE_INCREMENT_HANDLE_V2,
    CHANGELOG_HANDLE,
    CHANGELOG_HANDLE_V2,
    EMPTY_SEGMENT_FILE_HANDLE,
    FILE_STREAM_STATE_HANDLE,
    INCREMENTAL_KEY_GROUPS_HANDLE,
    INCREMENTAL_KEY_GROUPS_HANDLE_V2,
    KEY_GROUPS_HANDLE,
    KEY_GROUPS_HANDLE_V2,
    KEYED_TAGS,
    MAX_HANDLE_NESTING,
    NULL_HANDLE,
    OPERATOR_STATE_MODES,
    OPERATOR_TAGS,
    PARTITIONABLE_OPERATOR_STATE_HANDLE,
    RELATIVE_STREAM_STATE_HANDLE,
    SAVEPOINT_KEY_GROUPS_HANDLE,
    SEGMENT_FILE_HANDLE,
    SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE,
    STATE_SCOPES,
    STREAM_TAGS,
    TAG_NAMES,
)
from udfs.savepoint.metadata_model import (
    Handle,
    MetadataError,
    MetadataReader,
    OperatorState,
    SavepointMetadata,
    StateStream,
    StreamRef,
    check_flink_path,
    decode_modified_utf8,
)
from udfs.savepoint.releases import NEWEST_FORMAT_READ, STREAM_TAG_KEY_GROUPS_SINCE, TAG_SINCE, reading_release

__all__ = [
    "BYTE_STREAM_STATE_HANDLE",
    "CHANGELOG_BYTE_INCREMENT_HANDLE",
    "CHANGELOG_DELTA_TAGS",
    "CHANGELOG_FILE_INCREMENT_HANDLE",
    "CHANGELOG_FILE_INCREMENT_HANDLE_V2",
    "CHANGELOG_HANDLE",
    "CHANGELOG_HANDLE_V2",
    "CHANNEL_TAG_NAMES",
    "CHECKPOINT_PROPERTIES_CLASS",
    "CHECKPOINT_PROPERTIES_SUID",
    "EMPTY_SEGMENT_FILE_HANDLE",
    "FILE_STREAM_STATE_HANDLE",
    "FORMATS",
    "HEADER_MAGIC",
    "INCREMENTAL_KEY_GROUPS_HANDLE",
    "INCREMENTAL_KEY_GROUPS_HANDLE_V2",
    "INPUT_CHANNEL_STATE_HANDLE",
    "KEYED_TAGS",
    "KEY_GROUPS_HANDLE",
    "KEY_GROUPS_HANDLE_V2",
    "MASTER_STATE_MAGIC",
    "MAX_HANDLE_NESTING",
    "MERGED_INPUT_CHANNEL_STATE_HANDLE",
    "MERGED_RESULT_SUBPARTITION_STATE_HANDLE",
    "NEWEST_FORMAT_READ",
    "NULL_HANDLE",
    "OPERATOR_STATE_MODES",
    "OPERATOR_TAGS",
    "PARTITIONABLE_OPERATOR_STATE_HANDLE",
    "RELATIVE_STREAM_STATE_HANDLE",
    "RESULT_SUBPARTITION_STATE_HANDLE",
    "SAVEPOINT_KEY_GROUPS_HANDLE",
    "SEGMENT_FILE_HANDLE",
    "SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE",
    "STATE_SCOPES",
    "STREAM_TAGS",
    "STREAM_TAG_KEY_GROUPS_SINCE",
    "SUPPORTED_VERSIONS",
    "TAG_NAMES",
    "TAG_SINCE",
    "TRAILER_CLASSES",
    "TRAILER_ENUMS",
    "CheckpointPropertiesWalker",
    "Handle",
    "MetadataError",
    "MetadataReader",
    "OperatorState",
    "SavepointMetadata",
    "StateStream",
    "StreamRef",
    "check_flink_path",
    "decode_modified_utf8",
    "parse_metadata",
    "read_java_serialized_object",
]

HEADER_MAGIC = 0x4960672D

# Format version -> its reader (Flink's MetadataSerializers). A new format is one new module
# whose class extends the newest one here, and one entry.
FORMATS: dict[int, type[FormatBase]] = {f.VERSION: f for f in (FormatV2, FormatV3, FormatV4, FormatV5, FormatV6)}
SUPPORTED_VERSIONS = tuple(FORMATS)


def parse_metadata(data: bytes, flink_line: str | None = None) -> SavepointMetadata:
    """Parse one ``_metadata`` file as Flink's ``Checkpoints.loadCheckpointMetadata`` would.

    ``flink_line`` is the Flink release that reads the file (as in a restore: the new job's
    version, e.g. '1.14.6'). When given, the file is read as that release's reader would: formats
    and tags newer than the release fail as there, and 1.11 / 1.14 use their own layouts
    (``releases``). Without it, the newest reader (2.3) is modelled. Raises
    MetadataError(message, offset) on anything Flink could not read (bad magic, unknown version
    or tag, truncation, malformed string, ...).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"parse_metadata needs bytes, got {type(data).__name__}")
    r = MetadataReader(bytes(data))
    release = reading_release(flink_line)
    magic = r.i32("magic number") & 0xFFFFFFFF
    if magic != HEADER_MAGIC:
        raise MetadataError(f"not a Flink _metadata file: magic number 0x{magic:08x}, expected 0x{HEADER_MAGIC:08x}", 0)
    version = r.i32("metadata version")
    if version == 1:
        raise MetadataError("metadata version 1 (Flink 1.1 / 1.2) is no longer supported by Flink", 4)
    newest = release.newest_format
    if newest is not None and version > newest:
        raise MetadataError(
            f"Unrecognized checkpoint version number: {version} (Flink {release.name} reads up to {newest})", 4
        )
    if version not in FORMATS:
        raise MetadataError(f"unknown metadata version {version} (known: {min(FORMATS)} to {max(FORMATS)})", 4)
    return FORMATS[version](r, release).read()
