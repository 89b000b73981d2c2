package android.app;
import android.content.ContextWrapper;
/** Stand-in (stubs/README.md). */
public abstract class Service extends ContextWrapper {
    public Service() { super(null); throw new RuntimeException("Stub!"); }
}
