package android.os;
/** Stand-in (stubs/README.md). */
public class BatteryManager {
    public boolean isCharging() { throw new RuntimeException("Stub!"); }
}
