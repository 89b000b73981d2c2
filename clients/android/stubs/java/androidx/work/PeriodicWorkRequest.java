package androidx.work;
import androidx.annotation.NonNull;
import java.util.concurrent.TimeUnit;
/** Stand-in (stubs/README.md). */
public final class PeriodicWorkRequest extends WorkRequest {
    public static final class Builder extends WorkRequest.Builder<Builder, PeriodicWorkRequest> {
        public Builder(@NonNull Class<? extends ListenableWorker> workerClass, long repeatInterval, @NonNull TimeUnit repeatIntervalTimeUnit) { throw new RuntimeException("Stub!"); }
    }
}
