import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.checkpoint.metadata.MetadataV3Serializer;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;

/**
 * Reads real _metadata files with the Flink on the classpath and writes them again with that
 * Flink's own writer: mode "store" = Checkpoints.storeCheckpointMetadata (the release's current
 * format: 4 for 1.20, 5 for 2.0, 6 for 2.3), mode "v3" = MetadataV3Serializer (format 3, as
 * Flink 1.11 - 1.15 write it). Usage: Reserialize MODE OUT_DIR FILE... (OUT_DIR/<parent>/_metadata)
 */
public class Reserialize {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        File outDir = new File(args[1]);
        for (int i = 2; i < args.length; i++) {
            File file = new File(args[i]);
            CheckpointMetadata m;
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(file)))) {
                m = Checkpoints.loadCheckpointMetadata(
                        in, Reserialize.class.getClassLoader(), file.getParentFile().toURI().toString());
            }
            File target = new File(new File(outDir, file.getParentFile().getName()), "_metadata");
            target.getParentFile().mkdirs();
            try (DataOutputStream out = new DataOutputStream(new FileOutputStream(target))) {
                if (mode.equals("v3")) {
                    out.writeInt(0x4960672D);
                    out.writeInt(MetadataV3Serializer.VERSION);
                    MetadataV3Serializer.INSTANCE.serialize(m, out);
                } else {
                    Checkpoints.storeCheckpointMetadata(m, out);
                }
            }
        }
    }
}
