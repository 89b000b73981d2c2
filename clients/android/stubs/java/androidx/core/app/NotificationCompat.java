package androidx.core.app;
import android.app.Notification;
import android.content.Context;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
/** Stand-in (stubs/README.md). */
public class NotificationCompat {
    public static final int PRIORITY_LOW = -1;
    public static class Builder {
        public Builder(@NonNull Context context, @NonNull String channelId) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setSmallIcon(int icon) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setContentTitle(@Nullable CharSequence title) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setOngoing(boolean ongoing) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setSilent(boolean silent) { throw new RuntimeException("Stub!"); }
        public @NonNull Builder setPriority(int priority) { throw new RuntimeException("Stub!"); }
        public @NonNull Notification build() { throw new RuntimeException("Stub!"); }
    }
}
