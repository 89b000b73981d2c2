package androidx.lifecycle;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public interface LifecycleOwner {
    @NonNull Lifecycle getLifecycle();
}
