package android.os;
/** Stand-in (stubs/README.md). */
public final class PowerManager {
    public boolean isPowerSaveMode() { throw new RuntimeException("Stub!"); }
}
