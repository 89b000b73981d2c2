package androidx.work;
import androidx.annotation.NonNull;
import java.util.concurrent.TimeUnit;
/** Stand-in (stubs/README.md). */
public abstract class WorkRequest {
    public abstract static class Builder<B extends Builder<?, ?>, W extends WorkRequest> {
        public final @NonNull B setConstraints(@NonNull Constraints constraints) { throw new RuntimeException("Stub!"); }
        public final @NonNull B setInputData(@NonNull Data inputData) { throw new RuntimeException("Stub!"); }
        public final @NonNull B setBackoffCriteria(@NonNull BackoffPolicy backoffPolicy, long backoffDelay, @NonNull TimeUnit timeUnit) { throw new RuntimeException("Stub!"); }
        public @NonNull B setExpedited(@NonNull OutOfQuotaPolicy policy) { throw new RuntimeException("Stub!"); }
        public final @NonNull W build() { throw new RuntimeException("Stub!"); }
    }
}
