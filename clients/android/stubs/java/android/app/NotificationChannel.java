package android.app;
/** Stand-in (stubs/README.md). */
public final class NotificationChannel {
    public NotificationChannel(String id, CharSequence name, int importance) { throw new RuntimeException("Stub!"); }
    public void setDescription(String description) { throw new RuntimeException("Stub!"); }
}
