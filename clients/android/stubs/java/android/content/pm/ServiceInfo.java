package android.content.pm;
/** Stand-in (stubs/README.md). */
public class ServiceInfo {
    public static final int FOREGROUND_SERVICE_TYPE_DATA_SYNC = 1;
}
