package androidx.lifecycle;
/** Stand-in (stubs/README.md). */
public interface LifecycleObserver {}
