package androidx.core.app;
import android.app.Activity;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public class ActivityCompat {
    public static void requestPermissions(@NonNull Activity activity, @NonNull String[] permissions, int requestCode) { throw new RuntimeException("Stub!"); }
}
