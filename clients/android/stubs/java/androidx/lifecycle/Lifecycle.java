package androidx.lifecycle;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public abstract class Lifecycle {
    public abstract void addObserver(@NonNull LifecycleObserver observer);
}
