package org.flinkjobgraph.harness;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.dag.Pipeline;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.PipelineExecutor;
import org.apache.flink.core.execution.PipelineExecutorFactory;
import org.apache.flink.core.execution.PipelineExecutorServiceLoader;

import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * The only executor the exporter lets Flink see (Flink 1.15+). Every job submission -
 * {@code execute()}, {@code executeAsync()}, a DataStream V2 {@code execute()}, a Table/SQL
 * {@code executeSql(INSERT ...)} / {@code Table.execute*()} / statement set - ends in a
 * {@link PipelineExecutor} chosen through {@code execution.target}. This one hands the submitted
 * StreamGraph to {@link Capture} and returns an already finished job; it never starts anything.
 *
 * <p>It is compatible with every configuration on purpose: if another executor factory were
 * visible too (say flink-clients' "local" one in a user's fat jar), Flink's service loader would
 * find two compatible factories and fail with "Multiple compatible client factories found" rather
 * than run the job. The exporter's class loader additionally hides all other factories, so a
 * program that builds its own local or remote environment is captured as well.
 */
public final class CaptureExecutorFactory implements PipelineExecutorFactory {
    public static final String NAME = "flink-jobgraph-capture";

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public boolean isCompatibleWith(Configuration configuration) {
        return true;
    }

    @Override
    public PipelineExecutor getExecutor(Configuration configuration) {
        return CaptureExecutorFactory::submit;
    }

    /** Service loader that knows no executor but this one (used by the context environments). */
    public static final PipelineExecutorServiceLoader LOADER =
            new PipelineExecutorServiceLoader() {
                @Override
                public PipelineExecutorFactory getExecutorFactory(Configuration configuration) {
                    return new CaptureExecutorFactory();
                }

                @Override
                public Stream<String> getExecutorNames() {
                    return Stream.of(NAME);
                }
            };

    static CompletableFuture<JobClient> submit(
            Pipeline pipeline, Configuration configuration, ClassLoader userCodeClassLoader) {
        Capture.submitted(pipeline); // throws Capture.Stop after the first job with --first
        return CompletableFuture.completedFuture(finishedJob(new JobID()));
    }

    /**
     * A JobClient of a job that finished at once with no accumulators, built as a proxy so that
     * it fits the JobClient interface of every Flink line (its methods changed between releases).
     */
    static JobClient finishedJob(JobID id) {
        return (JobClient)
                Proxy.newProxyInstance(
                        JobClient.class.getClassLoader(),
                        new Class<?>[] {JobClient.class},
                        (proxy, method, args) -> {
                            switch (method.getName()) {
                                case "getJobID":
                                    return id;
                                case "getJobStatus":
                                    return CompletableFuture.completedFuture(JobStatus.FINISHED);
                                case "getJobExecutionResult":
                                    return CompletableFuture.completedFuture(
                                            new JobExecutionResult(id, 0L, new HashMap<>()));
                                case "getAccumulators":
                                    return CompletableFuture.completedFuture(new HashMap<>());
                                case "cancel":
                                    return CompletableFuture.completedFuture(null);
                                case "toString":
                                    return "CapturedJob(" + id + ")";
                                case "hashCode":
                                    return id.hashCode();
                                case "equals":
                                    return proxy == args[0];
                                default:
                                    if (method.getReturnType() == CompletableFuture.class) {
                                        CompletableFuture<Object> f = new CompletableFuture<>();
                                        f.completeExceptionally(
                                                new UnsupportedOperationException(
                                                        method.getName()
                                                                + ": the job was captured by flink-jobgraph"
                                                                + " export and never ran"));
                                        return f;
                                    }
                                    return null;
                            }
                        });
    }
}
