package androidx.lifecycle;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public interface DefaultLifecycleObserver extends LifecycleObserver {
    default void onStart(@NonNull LifecycleOwner owner) {}
    default void onStop(@NonNull LifecycleOwner owner) {}
}
