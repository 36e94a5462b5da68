package statetypes.user;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.avro.typeutils.GenericRecordAvroTypeInfo;

/**
 * The AVRO values' type information (flink-avro), in a class of its own: only jobs with Avro
 * state load it, and only they bundle flink-avro.
 */
final class AvroInfo {
    private AvroInfo() {}

    static TypeInformation<?> info() {
        return new GenericRecordAvroTypeInfo(AvroRec.schema());
    }
}
