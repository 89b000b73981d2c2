package androidx.work;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public final class Constraints {
    public static final class Builder {
        public Builder() { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setRequiredNetworkType(@NonNull NetworkType networkType) { throw new RuntimeException("Stub!"); }
        public @NonNull Constraints build() { throw new RuntimeException("Stub!"); }
    }
}
