package com.google.firebase.messaging;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
import java.util.Map;
/** Stand-in (stubs/README.md). */
public final class RemoteMessage {
    public static final int PRIORITY_UNKNOWN = 0;
    public static final int PRIORITY_HIGH = 1;
    public static final int PRIORITY_NORMAL = 2;
    public @NonNull Map<String, String> getData() { throw new RuntimeException("Stub!"); }
    public int getPriority() { throw new RuntimeException("Stub!"); }
    public int getOriginalPriority() { throw new RuntimeException("Stub!"); }
    public @Nullable Notification getNotification() { throw new RuntimeException("Stub!"); }
    public static class Notification {
        public @Nullable String getTitle() { throw new RuntimeException("Stub!"); }
        public @Nullable String getBody() { throw new RuntimeException("Stub!"); }
    }
}
