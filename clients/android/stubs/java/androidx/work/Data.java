package androidx.work;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
import java.util.Map;
/** Stand-in (stubs/README.md). */
public final class Data {
    public @Nullable String getString(@NonNull String key) { throw new RuntimeException("Stub!"); }
    public @NonNull Map<String, Object> getKeyValueMap() { throw new RuntimeException("Stub!"); }
    public static final class Builder {
        public Builder() { throw new RuntimeException("Stub!"); }
        public @NonNull Builder putString(@NonNull String key, @Nullable String value) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder putAll(@NonNull Map<String, Object> values) { throw new RuntimeException("Stub!"); }
        public @NonNull Data build() { throw new RuntimeException("Stub!"); }
    }
}
