package android.content.pm;
/** Stand-in (stubs/README.md). */
public abstract class PackageManager {
    public static final int PERMISSION_GRANTED = 0;
}
