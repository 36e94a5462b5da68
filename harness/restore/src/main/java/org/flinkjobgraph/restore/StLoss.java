package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What became of the saved values in a restore that Flink accepted (docs/statetypes-harness.md,
 * "Restored values"): per state of v1 and of v2 a {@code restored} entry in {@code states_v1} /
 * {@code states_v2}, and the case's {@code values_check}. It is read from what the restore did:
 * the probe of every state's first access per key / instance in v2, the classes v1 and v2 were
 * compiled with, and v2's own savepoint taken right after the probe ({@code
 * savepoint.after_restore}: which states v2 keeps).
 *
 * <p>Outcomes of a v1 state: {@code came_back} (v2 declares it and every key / instance found
 * its value, whole), {@code fields_lost} (the values came back but fields of v1's class that v2's
 * class lacks, removed or renamed, are gone: {@code lost_fields}; a renamed field's new name
 * reads as its default, {@code defaulted_fields}), {@code not_declared} (v2 declares no state of
 * that name in that operator: its values are never read again, {@code kept_in_next_savepoint}
 * says whether v2's own savepoint still holds them), {@code absent} (v2 declares it but some key
 * or instance found nothing), {@code inconsistent} (a value came back that v1 did not write),
 * {@code unprobed} (not every key was accessed in time). A v2 state that v1 did not have is
 * {@code new_empty} (with {@code renamed_from} when the edit renamed it: a loss, the old name's
 * values are not read) or otherwise what its probe found. {@code lost}: true when saved values
 * are not what v2 reads (a loss Flink does not report), false when every value came back, null
 * when the probe cannot tell.
 */
final class StLoss {
    private StLoss() {}

    static final Pattern DEFAULTED = Pattern.compile("fields at their default \\[([^\\]]*)\\]");

    /** The compact reading of v2's own savepoint: per operator with state its states and serializers. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> afterRestore(Map<String, Object> meta, Map<String, String> keys) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("taken_by", "trigger-savepoint+cancel");
        out.put("savepoint_format", "CANONICAL");
        List<Object> ops = new ArrayList<>();
        for (Object o : (List<Object>) meta.get("operators")) {
            Map<String, Object> op = (Map<String, Object>) o;
            List<Object> states = new ArrayList<>();
            for (String part : new String[] {"keyed", "operator"}) {
                Map<String, Object> proxy = (Map<String, Object>) op.get(part);
                if (proxy == null) {
                    continue;
                }
                if (proxy.containsKey("error")) {
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("error", proxy.get("error"));
                    states.add(e);
                    continue;
                }
                for (String list : new String[] {"states", "broadcast_states"}) {
                    for (Object s : (List<Object>) proxy.getOrDefault(list, List.of())) {
                        Map<String, Object> st = (Map<String, Object>) s;
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("name", st.get("name"));
                        m.put("backend_state_type", st.get("backend_state_type"));
                        // the state's own serializer (a namespace serializer and a broadcast
                        // state's String key serializer say nothing about what was declared)
                        m.put("value_serializer", ((Map<String, Object>) st.get("serializers")).get("VALUE_SERIALIZER"));
                        states.add(m);
                    }
                }
            }
            if (states.isEmpty()) {
                continue;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("operator_id", op.get("operator_id"));
            m.put("operator_key", keys.get((String) op.get("operator_id")));
            m.put("states", states);
            ops.add(m);
        }
        out.put("operators", ops);
        return out;
    }

    /** The state names v2's own savepoint holds for an operator key; null when unknown. */
    @SuppressWarnings("unchecked")
    static TreeSet<String> kept(Map<String, Object> afterRestore, String operatorKey) {
        if (afterRestore == null) {
            return null;
        }
        for (Object o : (List<Object>) afterRestore.get("operators")) {
            Map<String, Object> op = (Map<String, Object>) o;
            if (operatorKey.equals(op.get("operator_key"))) {
                TreeSet<String> names = new TreeSet<>();
                for (Object s : (List<Object>) op.get("states")) {
                    Object n = ((Map<String, Object>) s).get("name");
                    if (n != null) {
                        names.add((String) n);
                    }
                }
                return names;
            }
        }
        return new TreeSet<>();
    }

    /**
     * Sets {@code restored} on every entry of states_v1 and states_v2 of a RESTORED case; returns
     * values_check: inconsistent (a value v1 did not write came back), lost (some saved values are
     * not what v2 reads), incomplete (not every state was probed, nothing lost as far as seen), ok.
     */
    @SuppressWarnings("unchecked")
    static String classify(Map<String, Object> rec, Map<String, Map<String, String>> probed, List<Object> expected,
            Map<String, Object> afterRestore) {
        Map<String, Integer> want = new LinkedHashMap<>();
        for (Object o : expected) {
            List<Object> e = (List<Object>) o;
            want.put((String) e.get(0), ((Number) e.get(1)).intValue());
        }
        Map<String, Map<String, Object>> v2 = new LinkedHashMap<>();
        for (Object o : (List<Object>) rec.get("states_v2")) {
            Map<String, Object> s = (Map<String, Object>) o;
            v2.put(s.get("operator_key") + "|" + s.get("state_name"), s);
        }
        Map<String, String> renamedFrom = new LinkedHashMap<>();
        for (Object o : (List<Object>) rec.get("edits")) {
            Map<String, Object> e = (Map<String, Object>) o;
            if ("rename_state".equals(e.get("type"))) {
                renamedFrom.put(e.get("target") + "|" + e.get("new"), (String) e.get("old"));
            }
        }
        boolean lost = false;
        boolean inconsistent = false;
        boolean unknown = false;
        java.util.Set<String> v1Keys = new java.util.HashSet<>();
        for (Object o : (List<Object>) rec.get("states_v1")) {
            Map<String, Object> s = (Map<String, Object>) o;
            String key = s.get("operator_key") + "|" + s.get("state_name");
            v1Keys.add(key);
            Map<String, Object> now = v2.get(key);
            Map<String, Object> r;
            if (now == null) {
                r = new LinkedHashMap<>();
                r.put("outcome", "not_declared");
                r.put("lost", true);
                TreeSet<String> kept = kept(afterRestore, (String) s.get("operator_key"));
                r.put("kept_in_next_savepoint", kept == null ? null : kept.contains((String) s.get("state_name")));
            } else {
                r = probe(probed.get((String) now.get("probe_key")), want.getOrDefault((String) now.get("probe_key"), 0));
                List<String> lostFields = lostFields((Map<String, Object>) s.get("value_class_def"),
                        (Map<String, Object>) now.get("value_class_def"));
                if (r.get("outcome").equals("came_back") && !lostFields.isEmpty()) {
                    r.put("outcome", "fields_lost");
                    r.put("lost", true);
                }
                if (!lostFields.isEmpty()) {
                    r.put("lost_fields", lostFields);
                }
                now.put("restored", r);
            }
            s.put("restored", r);
            lost |= Boolean.TRUE.equals(r.get("lost"));
            inconsistent |= "inconsistent".equals(r.get("outcome"));
            unknown |= r.get("lost") == null;
        }
        for (Map.Entry<String, Map<String, Object>> e : v2.entrySet()) {
            if (v1Keys.contains(e.getKey())) {
                continue;
            }
            Map<String, Object> s = e.getValue();
            Map<String, Object> r = probe(probed.get((String) s.get("probe_key")), want.getOrDefault((String) s.get("probe_key"), 0));
            String from = renamedFrom.get(e.getKey());
            if ("absent".equals(r.get("outcome"))) {
                r.put("outcome", "new_empty");
                r.put("lost", from != null);
            } else if ("came_back".equals(r.get("outcome"))) {
                r.put("outcome", "new_not_empty");
                r.put("lost", false);
            }
            if (from != null) {
                r.put("renamed_from", from);
            }
            s.put("restored", r);
            lost |= Boolean.TRUE.equals(r.get("lost"));
            inconsistent |= "inconsistent".equals(r.get("outcome"));
            unknown |= r.get("lost") == null && !"new_empty".equals(r.get("outcome"));
        }
        return inconsistent ? "inconsistent" : lost ? "lost" : unknown ? "incomplete" : "ok";
    }

    /** What the first accesses of one state found: came_back, absent (some or all), inconsistent, unprobed. */
    static Map<String, Object> probe(Map<String, String> outcomes, int expected) {
        Map<String, Object> r = new LinkedHashMap<>();
        int present = 0;
        int absent = 0;
        int bad = 0;
        TreeSet<String> defaulted = new TreeSet<>();
        if (outcomes != null) {
            for (String o : outcomes.values()) {
                if (o.startsWith(Vals.INCONSISTENT)) {
                    bad++;
                } else if (o.equals(Vals.ABSENT)) {
                    absent++;
                } else {
                    present++;
                    Matcher m = DEFAULTED.matcher(o);
                    if (m.find()) {
                        for (String f : m.group(1).split(",")) {
                            defaulted.add(f.trim());
                        }
                    }
                }
            }
        }
        int seen = present + absent + bad;
        if (bad > 0) {
            r.put("outcome", "inconsistent");
            r.put("lost", true);
        } else if (seen < expected) {
            r.put("outcome", "unprobed");
            r.put("lost", absent > 0 ? Boolean.TRUE : null);
        } else if (absent > 0) {
            r.put("outcome", "absent");
            r.put("lost", true);
        } else {
            r.put("outcome", "came_back");
            r.put("lost", false);
        }
        Map<String, Object> counts = new LinkedHashMap<>();
        counts.put("present", present);
        counts.put("absent", absent);
        counts.put("inconsistent", bad);
        counts.put("expected", expected);
        r.put("probe", counts);
        if (!defaulted.isEmpty()) {
            r.put("defaulted_fields", new ArrayList<>(defaulted));
        }
        return r;
    }

    /** Fields (POJO, Kryo, Avro record) of v1's class that v2's class of the same state lacks by name. */
    @SuppressWarnings("unchecked")
    static List<String> lostFields(Map<String, Object> before, Map<String, Object> now) {
        List<String> out = new ArrayList<>();
        if (before == null || now == null || before.get("fields") == null || now.get("fields") == null
                || !before.get("name").equals(now.get("name"))) {
            return out;
        }
        TreeSet<String> names = new TreeSet<>();
        for (Object f : (List<Object>) now.get("fields")) {
            names.add((String) ((List<Object>) f).get(1));
        }
        for (Object f : (List<Object>) before.get("fields")) {
            String n = (String) ((List<Object>) f).get(1);
            if (!names.contains(n)) {
                out.add(n);
            }
        }
        return out;
    }

    /** The probe outcomes' constants (statetypes.user.Vals). */
    static final class Vals {
        static final String ABSENT = "absent";
        static final String INCONSISTENT = "inconsistent";
    }
}
