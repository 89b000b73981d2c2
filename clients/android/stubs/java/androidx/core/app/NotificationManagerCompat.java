package androidx.core.app;
import android.content.Context;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public final class NotificationManagerCompat {
    public static @NonNull NotificationManagerCompat from(@NonNull Context context) { throw new RuntimeException("Stub!"); }
    public boolean areNotificationsEnabled() { throw new RuntimeException("Stub!"); }
}
