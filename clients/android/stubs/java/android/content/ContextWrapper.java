package android.content;
import java.io.File;
/** Stand-in (stubs/README.md). */
public class ContextWrapper extends Context {
    public ContextWrapper(Context base) { throw new RuntimeException("Stub!"); }
    @Override public Context getApplicationContext() { throw new RuntimeException("Stub!"); }
    @Override public File getFilesDir() { throw new RuntimeException("Stub!"); }
    @Override public File getNoBackupFilesDir() { throw new RuntimeException("Stub!"); }
    @Override public String getPackageName() { throw new RuntimeException("Stub!"); }
}
