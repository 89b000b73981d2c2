package com.google.firebase.messaging;
import android.app.Service;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public class FirebaseMessagingService extends Service {
    public void onMessageReceived(@NonNull RemoteMessage message) { throw new RuntimeException("Stub!"); }
    public void onNewToken(@NonNull String token) { throw new RuntimeException("Stub!"); }
}
