package android.os;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
import java.util.Set;
/** Stand-in (stubs/README.md). */
public final class Bundle {
    public @NonNull Set<String> keySet() { throw new RuntimeException("Stub!"); }
    public @Nullable String getString(@Nullable String key) { throw new RuntimeException("Stub!"); }
}
