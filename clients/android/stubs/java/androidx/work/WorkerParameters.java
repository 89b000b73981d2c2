package androidx.work;
/** Stand-in (stubs/README.md). */
public final class WorkerParameters {}
