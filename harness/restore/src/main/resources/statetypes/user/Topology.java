package statetypes.user;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The job's topology, described by one argument: segments separated by ';', each
 * {@code kind:key=value,...}:
 *
 * <pre>
 *   env:name=J,p=2,rate=300,keys=6[,maxp=128]      job name, parallelism, records/s, key count
 *   src:uid=src,name=Numbers                        the FLIP-27 number source
 *   map:name=Tap                                    a stateless map
 *   ost:uid=opstate,name=Buffer,type=POJO,state=buffer_pojo,mode=split|union,style=...
 *   keyed:uid=keyed-1,name=Agg1,key=TUPLE2,reg=open|lazy|init|hook,timers=1,states=name/KIND/TYPE/style/ttl+...
 *   win:uid=win-1,name=Win1,key=LONG,fn=aggregate|reduce,assigner=tumbling|global,type=POJO,style=...
 *   bc:uid=bc-1,name=Rules,key=STRING,type=POJO,state=rules_pojo,style=...
 * </pre>
 *
 * plus p= / maxp= on any operator. The stateful parts (the state functions, the broadcast
 * state's descriptor, the window's state type) are the job's own code ({@link Parts}, the
 * generated StJob of each job): their state declarations are written there as literal code, the
 * description's types and styles only name them for the probes.
 */
public final class Topology {
    private Topology() {}

    /** The job's own stateful parts (StJob): every state declaration of the job is in them. */
    public interface Parts {
        default KeyedStateFn keyed(String probeKey, List<String[]> states, int keys, boolean timers) {
            throw new UnsupportedOperationException("this job has no keyed state function");
        }

        default OpStateFn buffer(String probeKey, String stateName, String type) {
            throw new UnsupportedOperationException("this job has no operator state");
        }

        /** The broadcast state's descriptor, passed to broadcast(...). */
        default MapStateDescriptor<String, ?> rules() {
            throw new UnsupportedOperationException("this job has no broadcast state");
        }

        default BcastFn rulesFn(String probeKey, String stateName, String type) {
            throw new UnsupportedOperationException("this job has no broadcast state");
        }

        /** The window aggregate's accumulator type (the window state's value). */
        default TypeInformation<?> windowAccumulator() {
            throw new UnsupportedOperationException("this job has no aggregate window");
        }

        /** The (number, value) pairs the window reduce keeps (the window state's value). */
        default TypeInformation<?> windowPairs() {
            throw new UnsupportedOperationException("this job has no reduce window");
        }
    }

    /** {@code StJob <description> [--conf key=value]...}. */
    public static void main(String[] args, Parts parts) throws Exception {
        Map<String, String> conf = new HashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].equals("--conf") || i + 1 >= args.length) {
                throw new IllegalArgumentException("usage: StJob <description> [--conf key=value]...");
            }
            String kv = args[i + 1];
            int eq = kv.indexOf('=');
            conf.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(conf));
        env.execute(build(env, args[0], parts));
    }

    static Map<String, String> fields(String s) {
        Map<String, String> m = new LinkedHashMap<>();
        if (s.isEmpty()) {
            return m;
        }
        for (String kv : s.split(",")) {
            int eq = kv.indexOf('=');
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }

    static List<String[]> states(String s) {
        List<String[]> out = new ArrayList<>();
        for (String st : s.split("\\+")) {
            out.add(st.split("/"));
        }
        return out;
    }

    /** Builds the described job on {@code env} with the job's own parts; returns the job name. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static String build(StreamExecutionEnvironment env, String description, Parts parts) {
        String name = "statetypes";
        int keys = 6;
        int rate = 300;
        int parallelism = 1;
        DataStream<Long> s = null;
        for (String seg : description.split(";")) {
            int colon = seg.indexOf(':');
            String kind = seg.substring(0, colon);
            Map<String, String> f = fields(seg.substring(colon + 1));
            String id = f.containsKey("uid") ? f.get("uid") : "#" + f.get("name");
            switch (kind) {
                case "env":
                    name = f.get("name");
                    parallelism = Integer.parseInt(f.get("p"));
                    env.setParallelism(parallelism);
                    if (f.containsKey("maxp")) {
                        env.setMaxParallelism(Integer.parseInt(f.get("maxp")));
                    }
                    keys = Integer.parseInt(f.get("keys"));
                    rate = Integer.parseInt(f.get("rate"));
                    break;
                case "src":
                    s = named(Api.numbers(env, rate, parallelism, f.get("name")), f);
                    break;
                case "map":
                    s = named(s.map(new Ident()), f);
                    break;
                case "ost":
                    s = named(s.map(parts.buffer(id, f.get("state"), f.get("type"))), f);
                    break;
                case "keyed": {
                    String key = f.get("key");
                    KeyedStream<Long, Object> k = s.keyBy(new KeySel(key, keys), Vals.keyInfo(key));
                    s = named(k.process(parts.keyed(id, states(f.get("states")), keys, "1".equals(f.get("timers"))), Types.LONG), f);
                    break;
                }
                case "win": {
                    String key = f.get("key");
                    String type = f.get("type");
                    String pk = id + "|window-contents";
                    DataStream<Long> win;
                    if ("reduce".equals(f.get("fn"))) {
                        SingleOutputStreamOperator<Tuple2<Long, Object>> pairs = s.map(new WinFns.ToPair(pk, type, keys))
                                .returns((TypeInformation<Tuple2<Long, Object>>) parts.windowPairs())
                                .name("Pair");
                        KeyedStream<Tuple2<Long, Object>, Object> k = pairs.keyBy(new KeySel.OfPair(key, keys), Vals.keyInfo(key));
                        win = named(Api.window(k, f.get("assigner")).reduce(new WinFns.Red(pk, type, keys)), f)
                                .map(new First<Object>()).name("Numbers of " + f.get("name"));
                    } else {
                        KeyedStream<Long, Object> k = s.keyBy(new KeySel(key, keys), Vals.keyInfo(key));
                        win = named(Api.window(k, f.get("assigner")).aggregate(new WinFns.Agg<Object>(pk, type, keys),
                                (TypeInformation<Object>) parts.windowAccumulator(), Types.LONG), f);
                    }
                    // the window never fires while the job runs: it is a branch, joined back into the
                    // main stream (a union adds no operator) so that what follows still gets records
                    s = s.union(win);
                    break;
                }
                case "bc": {
                    String key = f.get("key");
                    BroadcastStream<Long> b = s.broadcast((MapStateDescriptor) parts.rules());
                    KeyedStream<Long, Object> k = s.keyBy(new KeySel(key, keys), Vals.keyInfo(key));
                    s = named(k.connect(b).process(parts.rulesFn(id, f.get("state"), f.get("type")), Types.LONG), f);
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown segment " + kind);
            }
        }
        Api.discard(s);
        return name;
    }

    static <T> SingleOutputStreamOperator<T> named(SingleOutputStreamOperator<T> op, Map<String, String> f) {
        if (f.containsKey("name")) {
            op.name(f.get("name"));
        }
        if (f.containsKey("uid")) {
            op.uid(f.get("uid"));
        }
        if (f.containsKey("p")) {
            op.setParallelism(Integer.parseInt(f.get("p")));
        }
        if (f.containsKey("maxp")) {
            op.setMaxParallelism(Integer.parseInt(f.get("maxp")));
        }
        return op;
    }

    /** A stateless map. */
    public static final class Ident implements MapFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            return v;
        }
    }

    /** The number of a (number, value) pair (generic in the value: its type is the pairs' own). */
    public static final class First<T> implements MapFunction<Tuple2<Long, T>, Long> {
        @Override
        public Long map(Tuple2<Long, T> t) {
            return t.f0;
        }
    }
}
