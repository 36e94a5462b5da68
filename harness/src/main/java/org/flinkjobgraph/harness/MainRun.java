package org.flinkjobgraph.harness;

import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.security.Permission;

/**
 * A user's main() as {@code export} runs it: on its own (daemon) thread, for at most
 * {@code --timeout} seconds, with {@code System.exit} turned into an exception while it runs.
 *
 * <p>A main() that never submits (it waits on a socket or sleeps before execute()) would otherwise
 * hold the export forever; at the limit the export ends with an error naming where main() was. A
 * main() that calls {@code System.exit(N)} would otherwise end the JVM with N and no word; the exit
 * is intercepted as Flink's own {@code FlinkSecurityManager} does ({@code
 * cluster.intercept-user-system-exit}), so the export can say that main() exited with N and whether
 * it had submitted a job. Where the JVM allows no security manager (Java 24+), a shutdown hook still
 * says that main() exited before submitting.
 */
final class MainRun {
    private MainRun() {}

    /** System.exit(status) called while main() ran: thrown instead of exiting. */
    static final class Exited extends SecurityException {
        final int status;

        Exited(int status) {
            super("System.exit(" + status + ") called by the job's main() (intercepted by flink-jobgraph export)");
            this.status = status;
        }
    }

    /** main() still running at the time limit. */
    static final class TimedOut extends RuntimeException {
        final String where;

        TimedOut(String where) {
            super(where);
            this.where = where;
        }
    }

    private static volatile boolean guarding;
    private static volatile boolean hookArmed;
    private static volatile String guardedMain;

    /**
     * Runs {@code main(args)}; returns what it threw (null when it returned). Throws {@link
     * TimedOut} when it is still running after {@code timeoutSeconds} (0: no limit).
     */
    static Throwable run(Method main, String[] args, ClassLoader loader, String mainClass, int timeoutSeconds)
            throws InterruptedException {
        guardedMain = mainClass;
        boolean intercepting = installExitGuard();
        if (!intercepting) {
            armShutdownHook();
        }
        Throwable[] failure = new Throwable[1];
        Thread t =
                new Thread(
                        () -> {
                            try {
                                main.invoke(null, (Object) args);
                            } catch (InvocationTargetException e) {
                                failure[0] = e.getCause();
                            } catch (Throwable e) {
                                failure[0] = e; // LinkageError: the main class's static initialiser
                            }
                        },
                        "main");
        t.setContextClassLoader(loader);
        t.setDaemon(true); // a main() left running at the limit does not keep the JVM alive
        guarding = true;
        hookArmed = true;
        try {
            t.start();
            t.join(timeoutSeconds > 0 ? timeoutSeconds * 1000L : 0L);
            if (t.isAlive()) {
                throw new TimedOut(where(t.getStackTrace()));
            }
            return failure[0];
        } finally {
            guarding = false;
            hookArmed = false;
        }
    }

    /** The exit status main() asked for, when {@code failure} is an intercepted System.exit. */
    static Integer exitStatus(Throwable failure) {
        Exited e = UserJobExport.find(failure, Exited.class);
        return e == null ? null : e.status;
    }

    /**
     * "at com.acme.Job.main(Job.java:12), in java.lang.Thread.sleep": the deepest frame of code
     * outside the JDK (the job's, or a library it called), and the JDK method it waits in.
     */
    static String where(StackTraceElement[] stack) {
        StackTraceElement own = null;
        for (StackTraceElement f : stack) {
            if (!isJdk(f.getClassName()) && !f.getClassName().startsWith(MainRun.class.getName())) {
                own = f;
                break;
            }
        }
        if (stack.length == 0) {
            return "at an unknown place (no stack)";
        }
        StackTraceElement top = stack[0];
        String in = top.getClassName() + "." + top.getMethodName();
        if (own == null) {
            return "in " + in;
        }
        return "at " + frame(own) + (own == top ? "" : ", in " + in);
    }

    private static String frame(StackTraceElement f) {
        String file = f.getFileName() == null ? "Unknown Source" : f.getFileName();
        String line = f.getLineNumber() >= 0 ? ":" + f.getLineNumber() : "";
        return f.getClassName() + "." + f.getMethodName() + "(" + file + line + ")";
    }

    private static boolean isJdk(String cls) {
        return cls.startsWith("java.") || cls.startsWith("javax.") || cls.startsWith("jdk.")
                || cls.startsWith("sun.") || cls.startsWith("com.sun.");
    }

    @SuppressWarnings("removal")
    private static boolean installExitGuard() {
        if (System.getSecurityManager() instanceof ExitGuard) {
            return true;
        }
        // Java 17 prints a four-line deprecation warning on System.err for setSecurityManager:
        // not the user's business, so it goes nowhere.
        PrintStream err = System.err;
        try {
            System.setErr(new PrintStream(OutputStream.nullOutputStream()));
            System.setSecurityManager(new ExitGuard());
            return true;
        } catch (UnsupportedOperationException | SecurityException e) {
            return false;
        } finally {
            System.setErr(err);
        }
    }

    /** Allows everything but System.exit while main() runs. */
    @SuppressWarnings("removal")
    private static final class ExitGuard extends SecurityManager {
        @Override
        public void checkPermission(Permission perm) {}

        @Override
        public void checkPermission(Permission perm, Object context) {}

        @Override
        public void checkExit(int status) {
            if (guarding) {
                throw new Exited(status);
            }
        }
    }

    private static void armShutdownHook() {
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    if (hookArmed && Capture.GRAPHS.isEmpty()) {
                                        System.err.println(
                                                "error: "
                                                        + guardedMain
                                                        + ".main() called System.exit before submitting a job"
                                                        + " (the export's exit code is main()'s): nothing to export");
                                    }
                                },
                                "flink-jobgraph-exit-hook"));
    }
}
