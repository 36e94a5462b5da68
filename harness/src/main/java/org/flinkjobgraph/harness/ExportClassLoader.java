package org.flinkjobgraph.harness;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;

/**
 * Class loader of the user's job: its jar and --classpath entries on top of the harness (parent
 * first, so a jar that bundles Flink still runs against the harness's Flink). Set as the thread
 * context class loader, it also hides every PipelineExecutorFactory service entry but the
 * harness's own: Flink's DefaultExecutorServiceLoader looks executors up through the context class
 * loader, so even an environment the program creates itself (createLocalEnvironment, a remote
 * environment, DataStream V2's default "local" target, flink-clients in a fat jar) can only reach
 * the capturing executor.
 */
final class ExportClassLoader extends URLClassLoader {
    static final String EXECUTOR_SERVICE =
            "META-INF/services/org.apache.flink.core.execution.PipelineExecutorFactory";

    private final String harnessLocation;

    ExportClassLoader(URL[] userUrls, ClassLoader parent) {
        super(userUrls, parent);
        URL loc = ExportClassLoader.class.getProtectionDomain().getCodeSource().getLocation();
        this.harnessLocation = loc.getPath();
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        Enumeration<URL> all = super.getResources(name);
        if (!EXECUTOR_SERVICE.equals(name)) {
            return all;
        }
        List<URL> ours = new ArrayList<>();
        while (all.hasMoreElements()) {
            URL u = all.nextElement();
            if (u.getPath().contains(harnessLocation)) {
                ours.add(u);
            }
        }
        return Collections.enumeration(ours);
    }
}
