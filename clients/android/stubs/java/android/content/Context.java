package android.content;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
import java.io.File;
/** Stand-in (stubs/README.md). */
public abstract class Context {
    public abstract Context getApplicationContext();
    public abstract File getFilesDir();
    public abstract File getNoBackupFilesDir();
    public final @Nullable <T> T getSystemService(@NonNull Class<T> serviceClass) { throw new RuntimeException("Stub!"); }
    public abstract @NonNull String getPackageName();
}
