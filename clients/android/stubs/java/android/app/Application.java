package android.app;
import android.content.ContextWrapper;
/** Stand-in (stubs/README.md). */
public class Application extends ContextWrapper {
    public Application() { super(null); throw new RuntimeException("Stub!"); }
    public void onCreate() { throw new RuntimeException("Stub!"); }
}
