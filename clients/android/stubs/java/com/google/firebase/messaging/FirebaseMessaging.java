package com.google.firebase.messaging;
import androidx.annotation.NonNull;
import com.google.android.gms.tasks.Task;
/** Stand-in (stubs/README.md). */
public class FirebaseMessaging {
    public static synchronized @NonNull FirebaseMessaging getInstance() { throw new RuntimeException("Stub!"); }
    public @NonNull Task<String> getToken() { throw new RuntimeException("Stub!"); }
    public @NonNull Task<Void> deleteToken() { throw new RuntimeException("Stub!"); }
}
