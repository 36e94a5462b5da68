package org.flinkjobgraph.harness;

import org.apache.flink.runtime.jobgraph.JobEdge;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.graph.StreamingJobGraphGenerator;
import org.apache.flink.util.StringUtils;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/** Flink's own answer for a StreamGraph: runs StreamingJobGraphGenerator and reads it back. */
public final class JobGraphExpected {
    private JobGraphExpected() {}

    /** {"operators":..., "job_vertices":..., "job_edges":..., "flink_version_full":...} or
     * {"error": "Class: message", "flink_version_full":...}. */
    public static Map<String, Object> compute(StreamGraph sg) {
        JobGraph jg;
        try {
            jg = StreamingJobGraphGenerator.createJobGraph(sg);
        } catch (Throwable t) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("error", rootError(t));
            m.put("flink_version_full", StreamGraphSpecExporter.flinkVersionFull());
            return m;
        }
        return read(sg, jg);
    }

    static String rootError(Throwable t) {
        // createJobGraph may wrap the real cause (e.g. in a CompletionException)
        Throwable x = t;
        while ((x instanceof java.util.concurrent.CompletionException
                        || x instanceof java.util.concurrent.ExecutionException
                        || x instanceof java.lang.reflect.InvocationTargetException)
                && x.getCause() != null) {
            x = x.getCause();
        }
        return x.toString();
    }

    public static Map<String, Object> read(StreamGraph sg, JobGraph jg) {
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        if (cl == null) {
            cl = JobGraphExpected.class.getClassLoader();
        }
        Map<Integer, Map<String, Object>> operators = new TreeMap<>();
        List<Object> vertices = new ArrayList<>();
        List<Object> edges = new ArrayList<>();

        for (JobVertex v : jg.getVertices()) {
            StreamConfig head = new StreamConfig(v.getConfiguration());
            int headId = head.getVertexID();
            List<String[]> ids = operatorIds(v);
            List<String> genIds = new ArrayList<>();
            List<String> userIds = new ArrayList<>();
            for (String[] p : ids) {
                genIds.add(p[0]);
                userIds.add(p[1]);
            }
            Map<Integer, StreamConfig> all = new TreeMap<>();
            all.put(headId, head);
            Map<Integer, StreamConfig> chained = head.getTransitiveChainedTaskConfigs(cl);
            if (chained != null) {
                all.putAll(chained);
            }
            for (Map.Entry<Integer, StreamConfig> e : all.entrySet()) {
                int nodeId = e.getKey();
                StreamConfig c = e.getValue();
                String opId = hex(c.getOperatorID());
                int idx = genIds.indexOf(opId);
                String user = idx >= 0 ? userIds.get(idx) : userHash(sg.getStreamNode(nodeId));
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("operator_id", opId);
                o.put("user_operator_id", user);
                o.put("jobvertex_id", v.getID().toString());
                o.put("chain_head_node_id", headId);
                o.put("chain_index", c.getChainIndex());
                o.put("is_chain_head", c.isChainStart());
                o.put("is_chain_end", c.isChainEnd());
                o.put("in_vertex_operator_ids", idx >= 0);
                if (operators.put(nodeId, o) != null) {
                    throw new IllegalStateException("node " + nodeId + " in two job vertices");
                }
            }

            Map<String, Object> jv = new LinkedHashMap<>();
            jv.put("id", v.getID().toString());
            jv.put("name", v.getName());
            jv.put("head_node_id", headId);
            jv.put("parallelism", v.getParallelism());
            jv.put("max_parallelism", v.getMaxParallelism());
            StreamNode headNode = sg.getStreamNode(headId);
            jv.put(
                    "slot_sharing_group",
                    v.getSlotSharingGroup() == null || headNode == null
                            ? null
                            : headNode.getSlotSharingGroup());
            jv.put("operator_ids", genIds);
            jv.put("user_operator_ids", userIds);
            vertices.add(jv);

            List<JobEdge> inputs = v.getInputs();
            List<StreamEdge> physical = head.getInPhysicalEdges(cl);
            if (physical == null || physical.size() != inputs.size()) {
                throw new IllegalStateException(
                        "vertex "
                                + v.getName()
                                + ": "
                                + inputs.size()
                                + " inputs but "
                                + (physical == null ? 0 : physical.size())
                                + " physical in-edges");
            }
            for (int i = 0; i < inputs.size(); i++) {
                JobEdge je = inputs.get(i);
                StreamEdge se = physical.get(i);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("source_vertex", je.getSource().getProducer().getID().toString());
                m.put("target_vertex", v.getID().toString());
                m.put("source_node", se.getSourceId());
                m.put("target_node", se.getTargetId());
                m.put("input_index", i);
                m.put("distribution_pattern", je.getDistributionPattern().toString());
                m.put("ship_strategy_name", je.getShipStrategyName());
                edges.add(m);
            }
        }

        Map<String, Object> ops = new LinkedHashMap<>();
        for (Map.Entry<Integer, Map<String, Object>> e : operators.entrySet()) {
            ops.put(String.valueOf(e.getKey()), e.getValue());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("operators", ops);
        out.put("job_vertices", vertices);
        out.put("job_edges", edges);
        out.put("flink_version_full", StreamGraphSpecExporter.flinkVersionFull());
        return out;
    }

    /** [generated, userDefined-or-null] pairs in JobVertex.getOperatorIDs() order. */
    @SuppressWarnings("unchecked")
    static List<String[]> operatorIds(JobVertex v) {
        List<String[]> out = new ArrayList<>();
        List<Object> list = (List<Object>) Refl.call(v, "getOperatorIDs", null);
        List<Object> users = null;
        if (Refl.has(v, "getUserDefinedOperatorIDs", 0)) {
            users = (List<Object>) Refl.call(v, "getUserDefinedOperatorIDs", null); // 1.9 - 1.10
        }
        for (int i = 0; i < list.size(); i++) {
            Object x = list.get(i);
            if (x instanceof OperatorID) {
                Object u = users == null ? null : users.get(i);
                out.add(new String[] {hex((OperatorID) x), u == null ? null : hex((OperatorID) u)});
            } else { // OperatorIDPair
                OperatorID gen = (OperatorID) Refl.call(x, "getGeneratedOperatorID", null);
                Object u = Refl.call(x, "getUserDefinedOperatorID", null);
                if (u instanceof Optional) {
                    u = ((Optional<?>) u).orElse(null);
                }
                out.add(new String[] {hex(gen), u == null ? null : hex((OperatorID) u)});
            }
        }
        return out;
    }

    static String hex(OperatorID id) {
        return id == null ? null : id.toHexString();
    }

    static String userHash(StreamNode n) {
        if (n == null || n.getUserHash() == null) {
            return null;
        }
        return new OperatorID(StringUtils.hexStringToByte(n.getUserHash())).toHexString();
    }

    /** Sanity checks on one expected answer; returns a problem description or null. */
    @SuppressWarnings("unchecked")
    public static String check(Map<String, Object> spec, Map<String, Object> expected) {
        if (expected.containsKey("error")) {
            return null;
        }
        Map<String, Object> ops = (Map<String, Object>) expected.get("operators");
        List<Object> nodes = (List<Object>) spec.get("nodes");
        if (ops.size() != nodes.size()) {
            return "operators " + ops.size() + " != nodes " + nodes.size();
        }
        for (Object n : nodes) {
            Object id = ((Map<String, Object>) n).get("id");
            if (!ops.containsKey(String.valueOf(id))) {
                return "node " + id + " missing from expected operators";
            }
        }
        Collection<Object> vs = (Collection<Object>) expected.get("job_vertices");
        for (Object v : vs) {
            if (((List<Object>) ((Map<String, Object>) v).get("operator_ids")).isEmpty()) {
                return "job vertex with empty operator_ids";
            }
        }
        return null;
    }
}
