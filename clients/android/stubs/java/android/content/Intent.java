package android.content;
import android.os.Bundle;
import androidx.annotation.Nullable;
/** Stand-in (stubs/README.md). */
public class Intent {
    public @Nullable Bundle getExtras() { throw new RuntimeException("Stub!"); }
}
