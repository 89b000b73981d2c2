package androidx.lifecycle;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public final class ProcessLifecycleOwner implements LifecycleOwner {
    public static @NonNull LifecycleOwner get() { throw new RuntimeException("Stub!"); }
    @Override public @NonNull Lifecycle getLifecycle() { throw new RuntimeException("Stub!"); }
}
