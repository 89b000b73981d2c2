package androidx.work;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public final class OneTimeWorkRequest extends WorkRequest {
    public static final class Builder extends WorkRequest.Builder<Builder, OneTimeWorkRequest> {
        public Builder(@NonNull Class<? extends ListenableWorker> workerClass) { throw new RuntimeException("Stub!"); }
    }
}
