package android.app;
/** Stand-in (stubs/README.md). */
public class NotificationManager {
    public static final int IMPORTANCE_LOW = 2;
    public static final int IMPORTANCE_DEFAULT = 3;
    public void createNotificationChannel(NotificationChannel channel) { throw new RuntimeException("Stub!"); }
}
