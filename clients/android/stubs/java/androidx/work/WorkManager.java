package androidx.work;
import android.content.Context;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public abstract class WorkManager {
    public static @NonNull WorkManager getInstance(@NonNull Context context) { throw new RuntimeException("Stub!"); }
    public abstract @NonNull Operation enqueueUniqueWork(@NonNull String uniqueWorkName, @NonNull ExistingWorkPolicy existingWorkPolicy, @NonNull OneTimeWorkRequest work);
    public abstract @NonNull Operation enqueueUniquePeriodicWork(@NonNull String uniqueWorkName, @NonNull ExistingPeriodicWorkPolicy existingPeriodicWorkPolicy, @NonNull PeriodicWorkRequest periodicWork);
}
