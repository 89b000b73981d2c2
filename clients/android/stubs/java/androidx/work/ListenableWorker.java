package androidx.work;
import android.content.Context;
import androidx.annotation.NonNull;
import com.google.common.util.concurrent.ListenableFuture;
/** Stand-in (stubs/README.md). */
public abstract class ListenableWorker {
    public ListenableWorker(@NonNull Context appContext, @NonNull WorkerParameters workerParams) { throw new RuntimeException("Stub!"); }
    public final @NonNull Context getApplicationContext() { throw new RuntimeException("Stub!"); }
    public final @NonNull Data getInputData() { throw new RuntimeException("Stub!"); }
    public final int getRunAttemptCount() { throw new RuntimeException("Stub!"); }
    public abstract @NonNull ListenableFuture<Result> startWork();
    public abstract static class Result {
        public static @NonNull Result success() { throw new RuntimeException("Stub!"); }
        public static @NonNull Result retry() { throw new RuntimeException("Stub!"); }
        public static @NonNull Result failure() { throw new RuntimeException("Stub!"); }
    }
}
