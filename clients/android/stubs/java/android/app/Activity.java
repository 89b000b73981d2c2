package android.app;
import android.content.ContextWrapper;
import android.content.Intent;
/** Stand-in (stubs/README.md). */
public class Activity extends ContextWrapper {
    public Activity() { super(null); throw new RuntimeException("Stub!"); }
    public Intent getIntent() { throw new RuntimeException("Stub!"); }
}
