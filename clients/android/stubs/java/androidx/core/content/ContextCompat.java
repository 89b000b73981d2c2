package androidx.core.content;
import android.content.Context;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public class ContextCompat {
    public static int checkSelfPermission(@NonNull Context context, @NonNull String permission) { throw new RuntimeException("Stub!"); }
}
