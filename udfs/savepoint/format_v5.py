"""Format 5: written by Flink 2.0 (``MetadataV5Serializer``).

New in this version: each operator state starts with the operator's name and uid
(``writeUTF``; the empty string stands for none).
"""

from __future__ import annotations

from udfs.savepoint.format_v4 import FormatV4


class FormatV5(FormatV4):
    VERSION = 5

    def operator_name_and_uid(self) -> tuple[str | None, str | None]:
        name = self.r.utf("operator name") or None
        uid = self.r.utf("operator uid") or None
        return name, uid
