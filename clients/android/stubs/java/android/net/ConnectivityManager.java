package android.net;
import androidx.annotation.Nullable;
/** Stand-in (stubs/README.md). */
public class ConnectivityManager {
    public @Nullable Network getActiveNetwork() { throw new RuntimeException("Stub!"); }
    public @Nullable NetworkCapabilities getNetworkCapabilities(@Nullable Network network) { throw new RuntimeException("Stub!"); }
}
