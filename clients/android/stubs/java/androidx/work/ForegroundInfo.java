package androidx.work;
import android.app.Notification;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public final class ForegroundInfo {
    public ForegroundInfo(int notificationId, @NonNull Notification notification) { throw new RuntimeException("Stub!"); }
    public ForegroundInfo(int notificationId, @NonNull Notification notification, int foregroundServiceType) { throw new RuntimeException("Stub!"); }
}
