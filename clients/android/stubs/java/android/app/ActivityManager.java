package android.app;
/** Stand-in (stubs/README.md). */
public class ActivityManager {
    public boolean isBackgroundRestricted() { throw new RuntimeException("Stub!"); }
}
