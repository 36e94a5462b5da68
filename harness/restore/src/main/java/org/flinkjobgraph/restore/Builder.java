package org.flinkjobgraph.restore;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.flinkjobgraph.harness.Refl;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Builds a {@link Program} with the real DataStream API and returns Flink's StreamGraph. */
public final class Builder {
    private final Compat compat;

    public Builder(Compat compat) {
        this.compat = compat;
    }

    /** The StreamGraph plus which StreamNodes each logical node became. */
    public static final class Built {
        public StreamGraph streamGraph;
        public Map<String, List<Integer>> nodesOf = new LinkedHashMap<>();
    }

    public Built build(Program p, Configuration conf, String jobName) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        compat.configureEnv(env, conf);
        env.setParallelism(p.envPar);
        if (p.envMaxPar > 0) {
            env.setMaxParallelism(p.envMaxPar);
        }
        if (!p.chaining) {
            env.disableOperatorChaining();
        }
        Map<String, Integer> txId = new HashMap<>();
        DataStream<Long> s = null;
        for (Program.Node n : p.main) {
            if (s == null) {
                s = source(env, n, txId);
            } else if (n.kind.equals("UNION")) {
                DataStream<Long> b = null;
                for (Program.Node bn : n.branch) {
                    b = b == null ? source(env, bn, txId) : op(b, bn, txId);
                }
                s = s.union(b);
            } else if (n.sink()) {
                sink(s, n, txId);
            } else {
                s = op(s, n, txId);
            }
        }
        Built out = new Built();
        out.streamGraph = env.getStreamGraph();
        out.streamGraph.setJobName(jobName);
        Map<Integer, String> owner = new TreeMap<>();
        for (Map.Entry<String, Integer> e : txId.entrySet()) {
            owner.put(e.getValue(), e.getKey());
        }
        String sinkId = p.main.get(p.main.size() - 1).id;
        for (Program.Node n : p.allNodes()) {
            out.nodesOf.put(n.id, new ArrayList<>());
        }
        for (StreamNode sn : out.streamGraph.getStreamNodes()) {
            String o = owner.get(sn.getId());
            // sink V2 expands into new transformations at translation time: the unclaimed
            // nodes are the (single) sink's writer/committer
            out.nodesOf.get(o == null ? sinkId : o).add(sn.getId());
        }
        for (List<Integer> l : out.nodesOf.values()) {
            l.sort(null);
        }
        return out;
    }

    private DataStream<Long> source(StreamExecutionEnvironment env, Program.Node n, Map<String, Integer> txId) {
        SingleOutputStreamOperator<Long> s;
        if (n.kind.equals("SRC_FLIP27")) {
            s = compat.flip27Source(env, n.rate, n.name);
        } else {
            s = Fns.legacySource(env, !n.kind.equals("SRC_LEGACY_SINGLE"), n.rate).name(n.name);
        }
        return decorate(s, n, txId);
    }

    private DataStream<Long> op(DataStream<Long> in, Program.Node n, Map<String, Integer> txId) {
        switch (n.kind) {
            case "REBALANCE":
                return in.rebalance();
            case "RESCALE":
                return in.rescale();
            case "SHUFFLE":
                return in.shuffle();
            case "MAP":
                return decorate(in.map(new Fns.MapFn()), n, txId);
            case "FILTER":
                return decorate(in.filter(new Fns.FilterFn()), n, txId);
            case "FLATMAP":
                return decorate(in.flatMap(new Fns.FlatMapFn()), n, txId);
            case "PROCESS":
                return decorate(in.process(new Fns.ProcessFn()), n, txId);
            case "BUFFER":
                return decorate(in.map(new Fns.BufferFn(false)), n, txId);
            case "BUFFER_UNION":
                return decorate(in.map(new Fns.BufferFn(true)), n, txId);
            default:
                break;
        }
        if (n.keyType.equals("Long")) {
            return keyed(in.keyBy(new Fns.LongKey(n.keyMod), Types.LONG), n, txId);
        }
        return keyed(in.keyBy(new Fns.StringKey(n.keyMod), Types.STRING), n, txId);
    }

    private <K> DataStream<Long> keyed(KeyedStream<Long, K> k, Program.Node n, Map<String, Integer> txId) {
        SingleOutputStreamOperator<Long> s;
        switch (n.kind) {
            case "KCOUNT":
                s = k.process(new Fns.CountFn<K>(), Types.LONG);
                break;
            case "KHIST":
                s = k.process(new Fns.HistFn<K>(), Types.LONG);
                break;
            case "KRECENT":
                s = k.process(new Fns.RecentFn<K>(), Types.LONG);
                break;
            case "REDUCE":
                s = k.reduce(new Fns.SumReduce());
                break;
            case "WTUMBLE":
                s = compat.tumblingReduce(k);
                break;
            case "WCOUNT":
                s = k.countWindow(n.count).reduce(new Fns.SumReduce());
                break;
            default:
                throw new IllegalArgumentException(n.kind);
        }
        return decorate(s, n, txId);
    }

    private SingleOutputStreamOperator<Long> decorate(
            SingleOutputStreamOperator<Long> s, Program.Node n, Map<String, Integer> txId) {
        if (n.name != null) {
            s.name(n.name);
        }
        if (n.uid != null) {
            s.uid(n.uid);
        }
        if (n.uidHash != null) {
            s.setUidHash(n.uidHash);
        }
        if (n.par > 0) {
            s.setParallelism(n.par);
        }
        if (n.maxPar > 0) {
            s.setMaxParallelism(n.maxPar);
        }
        if (n.startNewChain) {
            s.startNewChain();
        }
        if (n.disableChaining) {
            s.disableChaining();
        }
        txId.put(n.id, s.getTransformation().getId());
        return s;
    }

    private void sink(DataStream<Long> in, Program.Node n, Map<String, Integer> txId) {
        DataStreamSink<Long> s;
        boolean legacy = n.kind.equals("SINK_LEGACY");
        switch (n.kind) {
            case "SINK_DISCARD":
                s = compat.discardingSink(in);
                break;
            case "SINK_LEGACY":
                s = Fns.legacySink(in);
                break;
            case "SINK_STATEFUL":
                s = compat.statefulSink(in);
                break;
            default:
                throw new IllegalArgumentException(n.kind);
        }
        if (n.name != null) {
            s.name(n.name);
        }
        if (n.uid != null) {
            s.uid(n.uid);
        }
        if (n.uidHash != null && legacy) {
            s.setUidHash(n.uidHash);
        }
        if (n.par > 0) {
            s.setParallelism(n.par);
        }
        if (n.maxPar > 0) {
            s.getTransformation().setMaxParallelism(n.maxPar);
        }
        if (n.startNewChain) {
            // DataStreamSink has no startNewChain(); this is what it does on operators
            Refl.call(s.getTransformation(), "setChainingStrategy", null,
                    org.apache.flink.streaming.api.operators.ChainingStrategy.HEAD);
        }
        if (n.disableChaining) {
            s.disableChaining();
        }
        if (legacy) {
            txId.put(n.id, s.getTransformation().getId());
        }
    }
}
